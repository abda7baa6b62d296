//! The agent's core: the engine plus the scheduler as a plain state machine, no I/O.
//!
//! The shell feeds [`Event`]s to [`Core::handle`] and then calls [`Core::pump`], which fires
//! transitions (up to a budget, so that the shell can serve the network in between), queues
//! the tasks the engine hands out, and places them on workers; both append [`Command`]s for
//! the shell to carry out (messages to workers, answers to control clients, log lines, trace
//! records, and finally [`Command::Finish`]).
//!
//! Memory stays flat as the number of tasks grows: the engine is stepped only while fewer than
//! `high_water` tasks are queued, a task is kept only while it is queued or in flight, and
//! nothing but counters survives a finished task (trace records go straight to the shell).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use pnet_bundle::{Body, Bundle, FunctionId, PortId, Property, Require};
use pnet_engine::{Engine, RunConfig, RunError, RunResult, Step, Task, TaskId};
use pnet_protocol::{AgentMsg, ModuleDef, TaskRun, TaskTimes, WorkerMsg};
use pnet_stdlib::Value;

use crate::AgentError;
use crate::control::{Request, Response, Status, TaskInfo, WorkerStatus};
use crate::memory::{GPI_CAPABILITY, SharedTable, function_uses_memory};
use crate::sched::{ClassSpec, Impls, Pending, Sched, SchedConfig, WorkerId};

/// The property that limits retries after lost workers.
pub const MAX_RETRIES_PROPERTY: &str = "fhg.drts.schedule.maximum_number_of_retries";

/// Settings of the core.
#[derive(Clone, Debug)]
pub struct CoreConfig {
    /// Overrides the net's `fhg.drts.schedule.maximum_number_of_retries`.
    pub max_retries: Option<u32>,
    /// A control socket exists (a waiting net keeps running for its clients).
    pub control: bool,
    /// Workers started for the job; until they all joined (or [`Event::JoinTimeout`]), a task
    /// no current worker fits waits rather than failing the job.
    pub expected_workers: usize,
    /// Emit [`Command::Trace`] records.
    pub trace: bool,
    pub sched: SchedConfig,
    /// Engine steps per [`Core::pump`].
    pub step_budget: u32,
    /// The engine is not stepped while this many tasks are queued.
    pub high_water: usize,
    /// A task that no current worker can run waits for one to join (a persistent runtime,
    /// where workers come and go) rather than failing the job.
    pub wait_for_workers: bool,
    /// The agent's global memory (one table for all jobs of a runtime: clones share it).
    pub memory: SharedTable,
}

impl Default for CoreConfig {
    fn default() -> Self {
        CoreConfig {
            max_retries: None,
            control: false,
            expected_workers: 0,
            trace: false,
            sched: SchedConfig::default(),
            step_budget: 2048,
            high_water: 4096,
            wait_for_workers: false,
            memory: SharedTable::new(),
        }
    }
}

/// Something that happened.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// A worker passed the handshake (the shell has sent its Welcome).
    Joined {
        worker: WorkerId,
        name: String,
        capabilities: Vec<String>,
    },
    /// A worker's connection closed or went silent.
    Lost {
        worker: WorkerId,
        reason: String,
        /// How its process ended, when the agent started it and saw it end (`SIGSEGV`,
        /// `exit status 3`): the module it was running crashed.
        exit: Option<String>,
    },
    /// A message from a worker.
    Msg {
        worker: WorkerId,
        msg: WorkerMsg,
    },
    ClientOpened {
        client: u64,
    },
    Control {
        client: u64,
        request: Request,
    },
    ClientClosed {
        client: u64,
    },
    /// The workers that will ever join have joined (timeout, or the others died).
    JoinTimeout,
    /// Ctrl-C / SIGTERM.
    Cancel,
}

/// One task's span, for the trace and the task list (times since the job started).
#[derive(Clone, Debug, PartialEq)]
pub struct TraceRecord {
    pub worker: WorkerId,
    pub task: u64,
    /// The transition's name.
    pub name: Arc<str>,
    /// `module.function`.
    pub module: Arc<str>,
    /// `done`, `failed`, `cancelled` or `lost`.
    pub outcome: &'static str,
    /// When it was sent to the worker.
    pub sent: Duration,
    /// When it started on the worker, as the worker reported it ([`task_span`]); None when
    /// the worker did not say (its answer had no times, or it was lost).
    pub started: Option<Duration>,
    /// When it ended (as the worker reported it; else when its answer or loss arrived).
    pub end: Duration,
    /// When its answer (or its worker's loss) arrived.
    pub answered: Duration,
    /// Why it failed, or how its worker was lost.
    pub error: Option<String>,
    /// Runs before this one on workers that were lost.
    pub retries: u32,
    /// Its inputs (see [`crate::control::TaskInfo::inputs`]), kept as values: printed only
    /// when the record is shown.
    pub inputs: Option<TaskInputs>,
}

/// A task's input values and the names of its ports, as its record keeps them: printing is
/// left to who shows the record (`gspc tasks`, the monitor, the trace), not done at every
/// task's end.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskInputs {
    /// The ports' names, shared by every task of a module definition.
    pub names: Arc<[Arc<str>]>,
    /// Shared: the record goes to the job's task list and to the trace without a copy.
    pub values: Arc<[Value]>,
}

impl TaskInputs {
    /// `port = value, ...` in the literal form, cut at [`crate::control::MAX_INPUTS_TEXT`]
    /// bytes (a large value never prints whole: it is cut as it is written).
    pub fn text(&self) -> String {
        use std::fmt::Write;
        let max = crate::control::MAX_INPUTS_TEXT;
        let mut text = String::new();
        for (k, v) in self.values.iter().enumerate() {
            if k > 0 {
                text.push_str(", ");
            }
            match self.names.get(k) {
                Some(name) => {
                    let _ = write!(text, "{name} = ");
                }
                None => {
                    let _ = write!(text, "#{k} = ");
                }
            }
            let _ = write!(
                Cut {
                    text: &mut text,
                    max
                },
                "{v}"
            );
            if text.len() >= max {
                let mut end = max;
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                text.truncate(end);
                text.push_str("...");
                break;
            }
        }
        text
    }
}

/// Places a worker's report of a task ([`TaskTimes`]: from its receipt to its start, from its
/// start to its end) on the agent's clock: from `sent`, when the agent sent it (the receipt
/// is one network trip later, so the task is drawn early by at most that much), and never
/// after `now`, when the answer arrived. Tasks a worker received in one batch and ran one
/// after the other come out back to back.
pub fn task_span(sent: Duration, times: TaskTimes, now: Duration) -> (Duration, Duration) {
    let start = (sent + Duration::from_micros(times.queued_us)).min(now);
    let end = (start + Duration::from_micros(times.run_us)).min(now);
    (start, end)
}

/// Something for the shell to do.
#[derive(Debug)]
pub enum Command {
    Send {
        worker: WorkerId,
        msg: AgentMsg,
    },
    Reply {
        client: u64,
        response: Response,
    },
    /// A line for the worker event log.
    Log(String),
    Trace(TraceRecord),
    /// What a task logged (see [`WorkerMsg::Log`]).
    TaskLog {
        worker: WorkerId,
        task: u64,
        name: Arc<str>,
        text: String,
        dropped: u64,
    },
    /// The job has ended; stop the workers and return this.
    Finish(Box<Result<RunResult, AgentError>>),
}

#[derive(Debug)]
struct FnInfo {
    impls: Impls,
    inputs: Vec<PortId>,
    outputs: Vec<PortId>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EngineState {
    Busy,
    Waiting,
    Done,
}

/// The agent's state machine.
#[derive(Debug)]
pub struct Core<'b> {
    bundle: &'b Bundle,
    engine: Engine<'b>,
    sched: Sched,
    cfg: CoreConfig,
    defs: Vec<ModuleDef>,
    def_names: Vec<Arc<str>>,
    /// The input ports' names of each module definition (for the task records).
    input_names: Vec<Arc<[Arc<str>]>>,
    fns: Vec<Option<FnInfo>>,
    /// (function, transition index) -> [(transition name, class)].
    classes: HashMap<(u32, u32), Vec<(String, u32)>>,
    class_fn: Vec<FunctionId>,
    now: Duration,
    joined: usize,
    join_closed: bool,
    clients: usize,
    responses: HashMap<String, u64>,
    tasks_done: u64,
    has_put_token: bool,
    /// A control client said that no more tokens will come.
    closed: bool,
    state: EngineState,
    finished: bool,
    batches: Vec<(WorkerId, Vec<TaskRun>)>,
    /// The workers lost so far (the last [`MAX_LOSSES_KEPT`]), for messages.
    losses: Vec<LostWorker>,
    /// Lost workers being restarted: a task no live worker can run waits for them.
    workers_coming: usize,
    /// What changed the engine, with the engine's firing count at that moment, for the
    /// journal (see [`crate::journal`]); None: not journaled.
    ops: Option<Vec<(u64, crate::journal::Op)>>,
}

/// A lost worker, for messages.
#[derive(Clone, Debug)]
struct LostWorker {
    capabilities: Vec<String>,
    cause: String,
    worker: String,
    /// The call its process ended in, when the agent saw the process end.
    call: Option<LostCall>,
}

/// The module call a worker's process ended in, for the message that gives up on it.
#[derive(Clone, Debug, PartialEq)]
struct LostCall {
    task: u64,
    module: Arc<str>,
    /// How the process ended: `SIGSEGV`, `exit status 3`.
    how: String,
    transition: Arc<str>,
    at: String,
    inputs: String,
}

/// What a module did to its worker process, from how the process ended: `crashed with
/// SIGSEGV`; a process that exited with status 0 during a call did not crash, but the call
/// has no result.
fn ended_how(how: &str) -> String {
    if how == "exit status 0" {
        "ended its worker process (exit status 0) during the call".to_string()
    } else {
        format!("crashed with {how}")
    }
}

/// The losses of every worker, the same call's crashes once with their count and workers:
/// "module `m.f` crashed with SIGSEGV 8 times, on workers `a`, `b` (task 3, ...)".
fn describe_losses(losses: &[LostWorker]) -> String {
    let mut parts: Vec<(Option<&LostCall>, String, usize, Vec<&str>)> = Vec::new();
    for l in losses {
        let key = match &l.call {
            Some(c) => parts
                .iter()
                .position(|(k, ..)| k.is_some_and(|k| k.task == c.task && k.how == c.how)),
            None => parts
                .iter()
                .position(|(k, cause, ..)| k.is_none() && *cause == l.cause),
        };
        match key {
            Some(k) => {
                parts[k].2 += 1;
                if !parts[k].3.contains(&l.worker.as_str()) {
                    parts[k].3.push(&l.worker);
                }
            }
            None => parts.push((l.call.as_ref(), l.cause.clone(), 1, vec![&l.worker])),
        }
    }
    let one_call = parts.len() == 1 && parts[0].0.is_some();
    let mut text = parts
        .into_iter()
        .map(|(call, cause, n, workers)| match call {
            Some(c) if n > 1 => format!(
                "module `{}` {} {n} times, on worker(s) {} (task {}, transition `{}` at {}; \
                 inputs: {})",
                c.module,
                ended_how(&c.how),
                workers
                    .iter()
                    .map(|w| format!("`{w}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                c.task,
                c.transition,
                c.at,
                c.inputs
            ),
            Some(c) => format!("{cause}; inputs: {}", c.inputs),
            None if n > 1 => format!("{cause} ({n} times)"),
            None => cause,
        })
        .collect::<Vec<_>>()
        .join("; ");
    if one_call {
        text.push_str(
            "; every worker that could run this call ended on it, each restart included, so \
             none is left to try it again",
        );
    }
    text
}

const MAX_LOSSES_KEPT: usize = 64;

/// Whether the bundle calls modules (and so needs workers).
pub fn calls_modules(bundle: &Bundle) -> bool {
    bundle
        .functions
        .iter()
        .any(|f| matches!(f.body, Body::Module(_) | Body::Modules { .. }))
}

/// The module definitions of a bundle (sent to every worker in the Welcome) and, per
/// function, its implementations and port order.
fn module_defs(bundle: &Bundle) -> (Vec<ModuleDef>, Vec<Option<FnInfo>>) {
    let mut defs = Vec::new();
    let mut fns = Vec::new();
    for f in &bundle.functions {
        let inputs: Vec<PortId> = (0..f.ports.len())
            .filter(|&i| f.ports[i].dir.is_input())
            .map(PortId::from)
            .collect();
        let outputs: Vec<PortId> = (0..f.ports.len())
            .filter(|&i| f.ports[i].dir.is_output())
            .map(PortId::from)
            .collect();
        let mut def = |m: &pnet_bundle::Module| {
            let id = defs.len() as u32;
            defs.push(ModuleDef {
                id,
                module: m.name.clone(),
                function: m.signature.function.clone(),
                target: m.target.clone(),
                inputs: inputs
                    .iter()
                    .map(|p| (f.port(*p).name.clone(), f.port(*p).ty.clone()))
                    .collect(),
                outputs: outputs
                    .iter()
                    .map(|p| (f.port(*p).name.clone(), f.port(*p).ty.clone()))
                    .collect(),
                pass_context: m.pass_context,
                location: bundle.location(m.span),
            });
            id
        };
        let impls = match &f.body {
            Body::Module(m) => Some(Impls::One(def(m))),
            Body::Modules {
                preferences,
                modules,
            } => Some(Impls::Alternatives {
                preferences: preferences.clone(),
                modules: modules.iter().map(|m| (m.target.clone(), def(m))).collect(),
            }),
            _ => None,
        };
        fns.push(impls.map(|impls| FnInfo {
            impls,
            inputs,
            outputs,
        }));
    }
    (defs, fns)
}

fn property<'a>(props: &'a [Property], key: &str) -> Option<&'a str> {
    props
        .iter()
        .rev()
        .find(|p| p.key == key)
        .map(|p| p.value.as_str())
}

fn mandatory(reqs: &[Require], out: &mut Vec<String>) {
    for r in reqs.iter().filter(|r| r.mandatory) {
        if !out.contains(&r.key) {
            out.push(r.key.clone());
        }
    }
}

impl<'b> Core<'b> {
    /// Sets up the engine with the job's inputs.
    pub fn new(
        bundle: &'b Bundle,
        inputs: &[(String, Vec<Value>)],
        run: &RunConfig,
        cfg: CoreConfig,
    ) -> Result<Core<'b>, AgentError> {
        let mut engine = Engine::new(bundle, run).map_err(AgentError::Run)?;
        engine.put_inputs(inputs).map_err(AgentError::Run)?;
        let (defs, fns) = module_defs(bundle);
        let def_names = defs
            .iter()
            .map(|d| Arc::from(format!("{}.{}", d.module, d.function)))
            .collect();
        let input_names = defs
            .iter()
            .map(|d| {
                d.inputs
                    .iter()
                    .map(|(n, _)| Arc::from(n.as_str()))
                    .collect()
            })
            .collect();
        let has_put_token = match &bundle.function(bundle.root).body {
            Body::Net(n) => n.places.iter().any(|p| p.put_token),
            _ => false,
        };
        Ok(Core {
            bundle,
            engine,
            sched: Sched::new(cfg.sched.clone()),
            join_closed: cfg.expected_workers == 0,
            cfg,
            defs,
            def_names,
            input_names,
            fns,
            classes: HashMap::new(),
            class_fn: Vec::new(),
            now: Duration::ZERO,
            joined: 0,
            clients: 0,
            responses: HashMap::new(),
            tasks_done: 0,
            has_put_token,
            closed: false,
            state: EngineState::Busy,
            finished: false,
            batches: Vec::new(),
            losses: Vec::new(),
            workers_coming: 0,
            ops: None,
        })
    }

    /// How many tasks the engine has made (they are numbered from 0).
    pub fn tasks_made(&self) -> u64 {
        self.engine.stats().tasks
    }

    /// Keeps what changes the engine from now on for [`Core::take_ops`] (the journal).
    pub fn set_journaling(&mut self, on: bool) {
        self.ops = on.then(Vec::new);
    }

    /// Moves the operations kept since the last call to `into` (see [`Core::set_journaling`]).
    pub fn take_ops(&mut self, into: &mut Vec<(u64, crate::journal::Op)>) {
        if let Some(ops) = &mut self.ops {
            into.append(ops);
        }
    }

    fn note(&mut self, op: crate::journal::Op) {
        if let Some(ops) = &mut self.ops {
            ops.push((self.engine.stats().firings, op));
        }
    }

    /// [`Engine::discard_task`], journaled.
    fn discard(&mut self, id: TaskId) -> Result<(), RunError> {
        self.note(crate::journal::Op::Discard { task: id.0 });
        self.engine.discard_task(id)
    }

    /// Every module implementation of the job (for the Welcome).
    pub fn module_defs(&self) -> &[ModuleDef] {
        &self.defs
    }

    /// Sets the clock (time since the job started).
    pub fn set_now(&mut self, now: Duration) {
        self.now = now;
    }

    /// Tasks of other jobs a worker holds (see [`Sched::set_external`]).
    pub fn set_external(&mut self, worker: WorkerId, tasks: u32) {
        self.sched.set_external(worker, tasks);
    }

    /// How many lost workers are being restarted (a task that no live worker can run waits
    /// while some are).
    pub fn set_workers_coming(&mut self, n: usize) {
        self.workers_coming = n;
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    pub fn sched(&self) -> &Sched {
        &self.sched
    }

    /// The tasks done so far ([`Core::status`]'s, without its list of workers).
    pub fn tasks_done(&self) -> u64 {
        self.tasks_done
    }

    pub fn status(&self) -> Status {
        Status {
            elapsed_ms: self.now.as_millis() as u64,
            workers: self
                .sched
                .workers()
                .into_iter()
                .map(|w| WorkerStatus {
                    id: w.id,
                    name: w.name.to_string(),
                    capabilities: w.capabilities,
                    tasks: w.in_flight,
                    done: w.done,
                })
                .collect(),
            tasks_running: self.sched.running() as u64,
            tasks_queued: self.sched.queued() as u64,
            tasks_done: self.tasks_done,
            firings: self.engine.stats().firings,
            waiting: self.waiting(),
            tasks_sent: 0,
        }
    }

    /// A task's inputs for its record: its values (moved, or cloned) and the names of the
    /// ports, printed only when a record is shown ([`TaskInputs::text`]).
    fn task_inputs(&self, def: u32, values: Vec<Value>) -> TaskInputs {
        TaskInputs {
            names: self
                .input_names
                .get(def as usize)
                .cloned()
                .unwrap_or_else(|| Arc::from([])),
            values: values.into(),
        }
    }

    /// The tasks in flight (sent, not answered), oldest first per worker, as `sent`:
    /// which of them runs is for the caller to say (see [`Core::running_task`]).
    pub fn in_flight_tasks(&self) -> Vec<TaskInfo> {
        let mut v = Vec::new();
        for w in self.sched.workers() {
            for inf in self.sched.in_flight_records(w.id) {
                v.push(TaskInfo {
                    task: inf.task.id,
                    transition: self.sched.class(inf.task.class).name.to_string(),
                    module: self.def_names[inf.def as usize].to_string(),
                    worker_id: w.id,
                    worker: w.name.to_string(),
                    state: "sent".into(),
                    sent_us: inf.dispatched.as_micros() as u64,
                    started_us: None,
                    ended_us: None,
                    retries: inf.task.retries,
                    error: None,
                    log_bytes: 0,
                    inputs: Some(self.task_inputs(inf.def, inf.task.inputs.clone()).text()),
                });
            }
        }
        v
    }

    /// The task a worker runs for this job (workers run what they hold in order: the oldest
    /// in flight) and when it was sent.
    pub fn running_task(&self, worker: WorkerId) -> Option<(u64, Duration)> {
        self.sched
            .running_record(worker)
            .map(|inf| (inf.task.id, inf.dispatched))
    }

    /// The transition of a task in flight on a worker.
    pub fn task_transition(&self, worker: WorkerId, task: u64) -> Option<Arc<str>> {
        let class = self.sched.in_flight_class(worker, task)?;
        Some(self.sched.class(class).name.clone())
    }

    /// Handles one event.
    pub fn handle(&mut self, ev: Event, out: &mut Vec<Command>) {
        if self.finished {
            if let Event::Control { client, .. } = ev {
                out.push(Command::Reply {
                    client,
                    response: Response::Error("the job has ended".into()),
                });
            }
            return;
        }
        match ev {
            Event::Joined {
                worker,
                name,
                capabilities,
            } => {
                out.push(Command::Log(format!(
                    "worker {worker} `{name}` joined with capabilities [{}]",
                    capabilities.join(", ")
                )));
                self.sched.add_worker(worker, &name, capabilities);
                self.joined += 1;
                if self.joined >= self.cfg.expected_workers {
                    self.join_closed = true;
                }
            }
            Event::Lost {
                worker,
                reason,
                exit,
            } => self.lost(worker, &reason, exit.as_deref(), out),
            Event::Msg { worker, msg } => self.message(worker, msg, out),
            Event::ClientOpened { .. } => self.clients += 1,
            Event::ClientClosed { .. } => self.clients = self.clients.saturating_sub(1),
            Event::Control { client, request } => self.control(client, request, out),
            Event::JoinTimeout => {
                if !self.join_closed {
                    out.push(Command::Log(format!(
                        "{} of {} planned workers joined; going on without the others",
                        self.joined, self.cfg.expected_workers
                    )));
                    self.join_closed = true;
                }
            }
            Event::Cancel => {
                out.push(Command::Log("cancelled".into()));
                self.fail(AgentError::Cancelled, out);
            }
        }
    }

    fn lost(&mut self, worker: WorkerId, reason: &str, exit: Option<&str>, out: &mut Vec<Command>) {
        let name = self
            .sched
            .worker_name(worker)
            .map(|n| n.to_string())
            .unwrap_or_else(|| format!("#{worker}"));
        let caps = self
            .sched
            .worker_caps(worker)
            .map(<[String]>::to_vec)
            .unwrap_or_default();
        // What it was running (workers run their tasks in order: the oldest one).
        let running = self.sched.running_record(worker).map(|t| {
            (
                t.task.id,
                self.def_names[t.def as usize].clone(),
                self.sched.class(t.task.class).name.clone(),
                self.sched.class(t.task.class).location.clone(),
                (t.def, t.task.inputs.clone()),
            )
        });
        // A leaf runs many tasks at once: its loss is not the fault of its oldest one.
        let leaf_tasks = self
            .sched
            .is_leaf(worker)
            .then(|| self.sched.in_flight_records(worker).len());
        let cause = match (exit, &running) {
            _ if let Some(n) = leaf_tasks => {
                format!("leaf agent `{name}` was lost with {n} tasks in flight: {reason}")
            }
            (Some(how), Some((task, module, transition, at, _))) => format!(
                "module `{module}` {} on worker `{name}` (task {task}, transition `{transition}` at {at})",
                ended_how(how)
            ),
            (Some(how), None) => format!("worker `{name}` ended with {how} while idle ({reason})"),
            (None, Some((task, module, ..))) => format!(
                "worker `{name}` was lost while running module `{module}` (task {task}): {reason}"
            ),
            (None, None) => format!("worker `{name}` was lost: {reason}"),
        };
        let call = match (exit, running) {
            (Some(how), Some((task, module, transition, at, (def, inputs))))
                if leaf_tasks.is_none() =>
            {
                Some(LostCall {
                    task,
                    module,
                    how: how.to_string(),
                    transition,
                    at,
                    inputs: self.task_inputs(def, inputs).text(),
                })
            }
            _ => None,
        };
        let call_inputs = call.as_ref().map(|c| (c.task, c.inputs.clone()));
        self.losses.push(LostWorker {
            capabilities: caps,
            cause: cause.clone(),
            worker: name.clone(),
            call,
        });
        if self.losses.len() > MAX_LOSSES_KEPT {
            self.losses.remove(0);
        }
        if self.cfg.trace {
            for inf in self.sched.in_flight_records(worker) {
                out.push(Command::Trace(TraceRecord {
                    worker,
                    task: inf.task.id,
                    name: self.sched.class(inf.task.class).name.clone(),
                    module: self.def_names[inf.def as usize].clone(),
                    outcome: "lost",
                    sent: inf.dispatched,
                    started: None,
                    end: self.now,
                    answered: self.now,
                    error: Some(cause.clone()),
                    retries: inf.task.retries,
                    inputs: Some(self.task_inputs(inf.def, inf.task.inputs.clone())),
                }));
            }
        }
        let lost = self.sched.remove_worker(worker);
        out.push(Command::Log(format!(
            "worker {worker} `{name}` lost: {reason}; {} tasks queued again",
            lost.requeued.len()
        )));
        if exit.is_some() {
            out.push(Command::Log(cause.clone()));
        }
        if let Some(t) = lost.running
            && lost.exhausted.is_none()
        {
            out.push(Command::Log(format!(
                "retry: task {t} was running on `{name}`"
            )));
        }
        for id in lost.discarded {
            if let Err(e) = self.discard(TaskId(id)) {
                return self.fail(AgentError::Run(e), out);
            }
        }
        if let Some((id, retries, limit)) = lost.exhausted {
            let mut what = match exit {
                Some(_) => cause,
                None => format!("worker `{name}` was lost while running it ({reason})"),
            };
            if let Some((task, inputs)) = call_inputs
                && task == id
            {
                what.push_str(&format!("; inputs: {inputs}"));
            }
            let e = self.engine.fail_task(
                TaskId(id),
                &format!(
                    "{what}; it ran {retries} times, more than {MAX_RETRIES_PROPERTY} = {limit} allows"
                ),
            );
            self.fail(AgentError::Run(e), out);
        }
    }

    /// A leaf agent lost the worker running `task` and runs it again on another: the retry
    /// counts here, as for a lost worker of this agent; past the limit the job fails.
    fn leaf_retried(&mut self, worker: WorkerId, task: u64, out: &mut Vec<Command>) {
        let name = self
            .sched
            .worker_name(worker)
            .map(|n| n.to_string())
            .unwrap_or_else(|| format!("#{worker}"));
        out.push(Command::Log(format!(
            "retry: task {task} was running on a lost worker of leaf `{name}`, which runs it again"
        )));
        if let Some((retries, limit)) = self.sched.retried(worker, task) {
            let e = self.engine.fail_task(
                TaskId(task),
                &format!(
                    "a worker of leaf `{name}` was lost while running it; it ran {retries} \
                     times, more than {MAX_RETRIES_PROPERTY} = {limit} allows"
                ),
            );
            self.fail(AgentError::Run(e), out);
        }
    }

    fn message(&mut self, worker: WorkerId, msg: WorkerMsg, out: &mut Vec<Command>) {
        let (msg, times) = msg.split_times();
        let (task, outcome) = match &msg {
            WorkerMsg::Done { task, .. } => (*task, "done"),
            WorkerMsg::Failed { task, .. } => (*task, "failed"),
            WorkerMsg::Cancelled { task } => (*task, "cancelled"),
            WorkerMsg::Returned { tasks, kept } => {
                for id in self.sched.returned(worker, tasks, kept) {
                    if let Err(e) = self.discard(TaskId(id)) {
                        return self.fail(AgentError::Run(e), out);
                    }
                }
                return;
            }
            WorkerMsg::Heartbeat { .. } | WorkerMsg::Memory(_) => return,
            WorkerMsg::Log {
                task,
                text,
                dropped,
            } => {
                if self.cfg.trace
                    && let Some(class) = self.sched.in_flight_class(worker, *task)
                {
                    out.push(Command::TaskLog {
                        worker,
                        task: *task,
                        name: self.sched.class(class).name.clone(),
                        text: text.clone(),
                        dropped: *dropped,
                    });
                }
                return;
            }
            WorkerMsg::DoneAt { .. } | WorkerMsg::FailedAt { .. } => {
                unreachable!("split by split_times")
            }
            WorkerMsg::Hello(_) | WorkerMsg::LeafHello(_) => {
                out.push(Command::Log(format!(
                    "worker {worker} sent a second Hello; ignored"
                )));
                return;
            }
            // A leaf agent (see `pnet_protocol::LeafHello`): its capacity is its window.
            WorkerMsg::Capacity { capacity } => {
                self.sched.set_capacity(worker, *capacity);
                return;
            }
            WorkerMsg::Retried { task } => return self.leaf_retried(worker, *task, out),
            WorkerMsg::Batch(_) | WorkerMsg::OfWorker { .. } => {
                if let WorkerMsg::Batch(msgs) | WorkerMsg::OfWorker { msgs, .. } = msg {
                    for m in msgs {
                        self.message(worker, m, out);
                    }
                }
                return;
            }
            // The hub keeps them for the status.
            WorkerMsg::LeafWorkers(_) => return,
        };
        let Some(mut inf) = self.sched.finish(worker, task, self.now) else {
            out.push(Command::Log(format!(
                "worker {worker} answered for task {task}, which it does not hold; ignored"
            )));
            return;
        };
        if self.cfg.trace {
            let (started, end) = match times {
                Some(t) => {
                    let (s, e) = task_span(inf.dispatched, t, self.now);
                    (Some(s), e)
                }
                None => (None, self.now),
            };
            out.push(Command::Trace(TraceRecord {
                worker,
                task,
                name: self.sched.class(inf.task.class).name.clone(),
                module: self.def_names[inf.def as usize].clone(),
                outcome: if inf.cancelled { "cancelled" } else { outcome },
                sent: inf.dispatched,
                started,
                end,
                answered: self.now,
                error: match &msg {
                    WorkerMsg::Failed { message, .. } => Some(message.clone()),
                    _ => None,
                },
                retries: inf.task.retries,
                // A task given back unasked is queued again below: its inputs stay with it.
                inputs: Some(self.task_inputs(
                    inf.def,
                    if matches!(msg, WorkerMsg::Cancelled { .. }) && !inf.cancelled {
                        inf.task.inputs.clone()
                    } else {
                        std::mem::take(&mut inf.task.inputs)
                    },
                )),
            }));
        }
        let id = TaskId(task);
        if inf.cancelled {
            if let Err(e) = self.discard(id) {
                self.fail(AgentError::Run(e), out);
            }
            return;
        }
        match msg {
            WorkerMsg::Done { outputs, .. } => {
                let f = self.class_fn[inf.task.class as usize];
                let ports = self.fns[f.index()]
                    .as_ref()
                    .map(|i| i.outputs.as_slice())
                    .unwrap_or_default();
                if outputs.len() != ports.len() {
                    let e = self.engine.fail_task(
                        id,
                        &format!(
                            "worker `{}` sent {} output values, expected {} ({})",
                            self.sched
                                .worker_name(worker)
                                .map(|n| n.to_string())
                                .unwrap_or_default(),
                            outputs.len(),
                            ports.len(),
                            self.defs[inf.def as usize]
                                .outputs
                                .iter()
                                .map(|(n, _)| n.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    );
                    return self.fail(AgentError::Run(e), out);
                }
                if let Some(ops) = &mut self.ops {
                    let transition = self.sched.class(inf.task.class).name.to_string();
                    let op = crate::journal::Op::Done {
                        task,
                        transition,
                        outputs: outputs.clone(),
                    };
                    ops.push((self.engine.stats().firings, op));
                }
                let outs = ports.iter().copied().zip(outputs).collect();
                self.tasks_done += 1;
                if let Err(e) = self.engine.complete_task(id, outs) {
                    return self.fail(AgentError::Run(e), out);
                }
                self.after_engine(out);
            }
            WorkerMsg::Failed { message, .. } => {
                let name = self
                    .sched
                    .worker_name(worker)
                    .map(|n| n.to_string())
                    .unwrap_or_default();
                out.push(Command::Log(format!(
                    "task {task} failed on `{name}`: {message}"
                )));
                let e = self.engine.fail_task(id, &message);
                self.fail(AgentError::Run(e), out);
            }
            WorkerMsg::Cancelled { .. } => {
                // Not asked for (the worker is stopping, for example): run it elsewhere.
                out.push(Command::Log(format!(
                    "task {task} was cancelled by worker {worker} on its own; queued again"
                )));
                self.sched.enqueue_front(inf.task);
            }
            WorkerMsg::Heartbeat { .. }
            | WorkerMsg::Hello(_)
            | WorkerMsg::LeafHello(_)
            | WorkerMsg::Batch(_)
            | WorkerMsg::OfWorker { .. }
            | WorkerMsg::LeafWorkers(_)
            | WorkerMsg::Capacity { .. }
            | WorkerMsg::Retried { .. }
            | WorkerMsg::Memory(_)
            | WorkerMsg::Returned { .. }
            | WorkerMsg::DoneAt { .. }
            | WorkerMsg::FailedAt { .. }
            | WorkerMsg::Log { .. } => {}
        }
    }

    fn control(&mut self, client: u64, req: Request, out: &mut Vec<Command>) {
        let response = match req {
            Request::Status => Response::Status(self.status()),
            Request::PutToken { place, value } => match self.put_token(place, value) {
                Ok(()) => {
                    self.state = EngineState::Busy;
                    Response::Ok
                }
                Err(e) => Response::Error(e.to_string()),
            },
            Request::WorkflowResponse { place, value } => {
                if self.ops.is_some() {
                    self.note(crate::journal::Op::Response {
                        place: place.clone(),
                        value: value.clone(),
                    });
                }
                match self.engine.request_response(&place, value) {
                    Ok(id) => {
                        self.state = EngineState::Busy;
                        self.responses.insert(id, client);
                        return;
                    }
                    Err(e) => Response::Error(e.to_string()),
                }
            }
            Request::Close => {
                self.note(crate::journal::Op::Close);
                self.closed = true;
                Response::Ok
            }
            Request::Cancel => {
                out.push(Command::Reply {
                    client,
                    response: Response::Ok,
                });
                out.push(Command::Log("cancelled by a control client".into()));
                return self.fail(AgentError::Cancelled, out);
            }
            // The hub keeps the task records and answers these itself.
            Request::Tasks | Request::Logs { .. } => {
                Response::Error("the job keeps no task records".into())
            }
            // A JSON client's token: typed by its place, then as a postcard client's.
            Request::PutTokenJson { place, value } => {
                match crate::control::json::token_from_json(self.bundle, &place, &value, false) {
                    Ok(value) => {
                        return self.control(client, Request::PutToken { place, value }, out);
                    }
                    Err(e) => Response::Error(e),
                }
            }
            Request::WorkflowResponseJson { place, value } => {
                match crate::control::json::token_from_json(self.bundle, &place, &value, true) {
                    Ok(value) => {
                        let request = Request::WorkflowResponse { place, value };
                        return self.control(client, request, out);
                    }
                    Err(e) => Response::Error(e),
                }
            }
        };
        out.push(Command::Reply { client, response });
    }

    /// [`Engine::put_token`], journaled when it took the token.
    fn put_token(&mut self, place: String, value: Value) -> Result<(), RunError> {
        let kept = self.ops.is_some().then(|| (place.clone(), value.clone()));
        let firings = self.engine.stats().firings;
        self.engine.put_token(&place, value)?;
        if let (Some(ops), Some((place, value))) = (&mut self.ops, kept) {
            ops.push((firings, crate::journal::Op::Put { place, value }));
        }
        Ok(())
    }

    /// Eurekas and workflow responses the engine produced.
    fn after_engine(&mut self, out: &mut Vec<Command>) {
        if !self.engine.has_eurekas_or_responses() {
            return;
        }
        let groups = self.engine.take_eurekas();
        if !groups.is_empty() {
            let (removed, running) = self.sched.cancel_groups(&groups);
            out.push(Command::Log(format!(
                "eureka {}: {} queued and {} running tasks cancelled",
                groups.join(", "),
                removed.len(),
                running.len()
            )));
            for id in removed {
                if let Err(e) = self.discard(TaskId(id)) {
                    return self.fail(AgentError::Run(e), out);
                }
            }
            for (worker, task) in running {
                out.push(Command::Send {
                    worker,
                    msg: AgentMsg::Cancel { task },
                });
            }
        }
        for (id, v) in self.engine.take_responses() {
            if let Some(client) = self.responses.remove(&id) {
                out.push(Command::Reply {
                    client,
                    response: Response::Value(v),
                });
            }
        }
    }

    /// The class of a task (one per transition), made on first sight.
    fn class_of(&mut self, task: &Task) -> Result<u32, RunError> {
        let key = (task.function.0, task.transition.0);
        if let Some(v) = self.classes.get(&key)
            && let Some((_, c)) = v.iter().find(|(n, _)| *n == task.name)
        {
            return Ok(*c);
        }
        let b = self.bundle;
        let f = b.function(task.function);
        let tr = b
            .functions
            .iter()
            .filter_map(|g| match &g.body {
                Body::Net(n) => n.transitions.get(task.transition.index()),
                _ => None,
            })
            .find(|t| t.function == task.function && t.name == task.name);
        let mut req = Vec::new();
        let mut tprops: &[Property] = &[];
        if let Some(t) = tr {
            mandatory(&t.requires, &mut req);
            tprops = &t.properties;
        }
        mandatory(&f.requires, &mut req);
        // Memory buffers and transfers need a worker with working memory.
        if function_uses_memory(f) && !req.iter().any(|r| r == GPI_CAPABILITY) {
            req.push(GPI_CAPABILITY.to_string());
        }
        let max_retries = match self.cfg.max_retries {
            Some(n) => Some(n),
            None => {
                let v = property(&f.properties, MAX_RETRIES_PROPERTY)
                    .or_else(|| property(tprops, MAX_RETRIES_PROPERTY))
                    .or_else(|| b.function(b.root).property(MAX_RETRIES_PROPERTY));
                match v {
                    None => None,
                    Some(s) => Some(s.trim().parse::<u32>().map_err(|_| {
                        let mut e = RunError::new(pnet_engine::RunErrorKind::Bundle(format!(
                            "property {MAX_RETRIES_PROPERTY} = \"{s}\" is not a number of retries"
                        )));
                        e.transition = Some(task.name.clone());
                        e.transition_at = Some(task.location.clone());
                        e
                    })?),
                }
            }
        };
        let impls = self.fns[task.function.index()]
            .as_ref()
            .map(|i| i.impls.clone())
            .ok_or_else(|| {
                RunError::new(pnet_engine::RunErrorKind::Bundle(format!(
                    "transition `{}` was handed out as a task but calls no module",
                    task.name
                )))
            })?;
        let c = self.sched.add_class(ClassSpec {
            name: task.name.as_str().into(),
            location: task.location.clone(),
            mandatory: req,
            impls,
            max_retries,
        });
        self.class_fn.push(task.function);
        self.classes
            .entry(key)
            .or_default()
            .push((task.name.clone(), c));
        Ok(c)
    }

    fn enqueue(&mut self, task: Task) -> Result<(), RunError> {
        let class = self.class_of(&task)?;
        let info = self.fns[task.function.index()]
            .as_ref()
            .ok_or_else(|| RunError::new(pnet_engine::RunErrorKind::Bundle("no module".into())))?;
        let mut given = task.inputs;
        let inputs = if given.len() == info.inputs.len()
            && given.iter().zip(&info.inputs).all(|((p, _), q)| p == q)
        {
            given.into_iter().map(|(_, v)| v).collect()
        } else {
            let mut v = Vec::with_capacity(info.inputs.len());
            for p in &info.inputs {
                match given.iter().position(|(q, _)| q == p) {
                    Some(k) => v.push(given.swap_remove(k).1),
                    None => {
                        let name = self.bundle.function(task.function).port(*p).name.clone();
                        return Err(self
                            .engine
                            .fail_task(task.id, &format!("input port `{name}` has no value")));
                    }
                }
            }
            v
        };
        let seq = self.sched.next_seq();
        self.sched.enqueue(Pending {
            id: task.id.0,
            class,
            inputs,
            eureka: task.eureka_group.map(Arc::from),
            memory: task.memory.map(Box::new),
            retries: 0,
            seq,
        });
        Ok(())
    }

    /// Fires transitions (up to the step budget), places queued tasks, and ends the job when
    /// it is over. Returns whether there is more to do right away (call again after serving
    /// the network).
    pub fn pump(&mut self, out: &mut Vec<Command>) -> bool {
        if self.finished {
            return false;
        }
        let mut steps = 0;
        if self.state != EngineState::Done {
            self.state = EngineState::Busy;
        }
        while self.state == EngineState::Busy
            && steps < self.cfg.step_budget
            && self.sched.queued() < self.cfg.high_water
        {
            // Firings in a batch, up to the budget (the engine ends it at a step that is no
            // firing, and after a firing that named a eureka or answered a response, which
            // `after_engine` serves). A step that is no firing counts as one.
            let budget = u64::from(self.cfg.step_budget - steps);
            let (fired, step) = match self.engine.run_steps(budget) {
                Ok((fired, step)) => (fired, Ok(step)),
                Err(e) => (0, Err(e)),
            };
            steps = steps.saturating_add(u32::try_from(fired).unwrap_or(u32::MAX));
            match step {
                Ok(Step::Fired) => {}
                Ok(Step::Task(t)) => {
                    steps += 1;
                    if let Err(e) = self.enqueue(t) {
                        self.fail(AgentError::Run(e), out);
                        return false;
                    }
                }
                Ok(Step::Waiting) => {
                    steps += 1;
                    self.state = EngineState::Waiting;
                }
                Ok(Step::Done) => {
                    steps += 1;
                    self.state = EngineState::Done;
                }
                Err(e) => {
                    self.fail(AgentError::Run(e), out);
                    return false;
                }
            }
            self.after_engine(out);
            if self.finished {
                return false;
            }
        }
        self.dispatch(out);
        if self.join_closed
            && !self.cfg.wait_for_workers
            && self.workers_coming == 0
            && let Some(c) = self.sched.unplaceable()
        {
            let e = self.no_worker(c);
            self.fail(e, out);
            return false;
        }
        match self.state {
            EngineState::Done => {
                // With a control socket, a net with put_token places (and without
                // drts.wait_for_output, which says itself when the job is over) keeps
                // running for its clients until one closes it (or cancels it).
                if self.has_put_token
                    && self.cfg.control
                    && !self.closed
                    && !self.engine.waits_for_output()
                {
                    return false;
                }
                let result = self.engine.result();
                self.finish(Ok(result), out);
                false
            }
            EngineState::Waiting => {
                if self.engine.running_tasks() == 0 && self.closed {
                    self.fail(
                        AgentError::Stuck(
                            "the net waits for output (drts.wait_for_output) but nothing is \
                             enabled, no task is running, and a control client closed the job"
                                .into(),
                        ),
                        out,
                    );
                } else if self.engine.running_tasks() == 0 && !self.cfg.control {
                    self.fail(
                        AgentError::Stuck(
                            "the net waits for output (drts.wait_for_output) but nothing is \
                             enabled and no task is running, and there is no control socket \
                             to put tokens through: pass --control SOCKET and put tokens with \
                             `gspc-run put-token`"
                                .into(),
                        ),
                        out,
                    );
                }
                false
            }
            EngineState::Busy => {
                steps >= self.cfg.step_budget && self.sched.queued() < self.cfg.high_water
            }
        }
    }

    fn dispatch(&mut self, out: &mut Vec<Command>) {
        let mut batches = std::mem::take(&mut self.batches);
        let mut failed: Vec<(WorkerId, u64, String)> = Vec::new();
        {
            let bundle = self.bundle;
            let class_fn = &self.class_fn;
            let memory = self.cfg.memory.clone();
            let mut table = None;
            self.sched.dispatch(self.now, |w, inf| {
                let mut run = TaskRun {
                    task: inf.task.id,
                    module: inf.def,
                    inputs: inf.task.inputs.clone(),
                    memory: None,
                };
                if let Some(m) = &inf.task.memory {
                    let table = table.get_or_insert_with(|| memory.lock());
                    let f = class_fn[inf.task.class as usize];
                    match crate::memory::plan(bundle, f, m, table) {
                        Ok(plan) => {
                            table.count_transfer(&plan);
                            run.memory = Some(plan);
                        }
                        Err(e) => {
                            failed.push((w, inf.task.id, e.message));
                            return;
                        }
                    }
                }
                match batches.iter_mut().find(|(b, _)| *b == w) {
                    Some((_, v)) => v.push(run),
                    None => batches.push((w, vec![run])),
                }
            });
        }
        for (worker, runs) in batches.drain(..) {
            out.push(Command::Send {
                worker,
                msg: AgentMsg::Run(runs),
            });
        }
        self.batches = batches;
        for (worker, tasks) in self.sched.steal() {
            out.push(Command::Log(format!(
                "stealing task(s) {tasks:?} from worker {worker} for an idle worker"
            )));
            out.push(Command::Send {
                worker,
                msg: AgentMsg::Steal { tasks },
            });
        }
        if let Some((worker, task, message)) = failed.into_iter().next() {
            // Never sent: take it back from the worker, then fail the job with the
            // transition's location, like a failed module call.
            self.sched.withdraw(worker, task);
            out.push(Command::Log(format!(
                "task {task} cannot run: its memory transfers are wrong: {message}"
            )));
            let e = self.engine.fail_task(TaskId(task), &message);
            self.fail(AgentError::Run(e), out);
        }
    }

    fn no_worker(&self, class: u32) -> AgentError {
        let spec = self.sched.class(class);
        let workers = self.sched.workers();
        let have = if workers.is_empty() {
            if !self.losses.is_empty() {
                format!(
                    "every worker that joined was lost: {}",
                    describe_losses(&self.losses)
                )
            } else if self.cfg.expected_workers == 0 {
                "no workers were started".to_string()
            } else {
                "no worker has joined".to_string()
            }
        } else {
            format!(
                "the workers have: {}",
                workers
                    .iter()
                    .map(|w| format!("`{}` [{}]", w.name, w.capabilities.join(", ")))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let lost_all = workers.is_empty() && !self.losses.is_empty();
        AgentError::NoWorker(format!(
            "in transition `{}` ({}): {} this module call: it needs {}; {}",
            spec.name,
            spec.location,
            if lost_all {
                "no worker is left to run"
            } else {
                "no worker can run"
            },
            spec.describe(),
            have
        ))
    }

    /// What the job waits for when a queued task fits no live worker: "no worker with
    /// the capabilities `GPU`: 2 lost (module `m.f` crashed with SIGSEGV ...)".
    pub fn waiting(&self) -> Option<String> {
        // a class no worker fits, else one only workerless leaf agents fit
        let (c, stalled) = match self.sched.unplaceable() {
            Some(c) => (c, false),
            None => (self.sched.stalled()?, true),
        };
        let spec = self.sched.class(c);
        let fitting: Vec<&LostWorker> = self
            .losses
            .iter()
            .filter(|l| spec.pick(&l.capabilities).is_some())
            .collect();
        let mut s = format!(
            "transition `{}` waits for a worker with {}",
            spec.name,
            spec.describe()
        );
        if let Some(last) = fitting.last() {
            s.push_str(&format!(
                ": {} such worker(s) lost, the last: {}",
                fitting.len(),
                last.cause
            ));
        }
        if self.workers_coming > 0 {
            s.push_str(&format!("; {} worker(s) restarting", self.workers_coming));
        } else if fitting.is_empty() && self.sched.worker_count() == 0 {
            s.push_str(
                "; no worker is connected: start leaf agents (`gspc-leaf`) or add workers \
                 (`gspc add-workers`)",
            );
        }
        // Only leaf agents fit, and none has workers now (they crashed or were lost): the
        // leaves' standard error says why.
        if stalled {
            let mut leaves: Vec<Arc<str>> = (self.sched.workers().into_iter())
                .filter(|w| self.sched.is_leaf(w.id) && w.window == 0)
                .map(|w| w.name)
                .collect();
            leaves.sort_unstable();
            s.push_str(&format!(
                "; the leaf agents that fit ({}) have no workers left (see their standard \
                 error); start new leaves or `gspc add-workers`",
                leaves
                    .iter()
                    .map(|l| format!("`{l}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        // Leaf agents offer the memory capability only with working memory (`--shm`): say so
        // rather than let the job wait for them.
        if spec.mandatory.iter().any(|m| m == GPI_CAPABILITY) {
            let mut leaves: Vec<Arc<str>> = (self.sched.workers().into_iter())
                .filter(|w| self.sched.is_leaf(w.id))
                .map(|w| w.name)
                .collect();
            leaves.sort_unstable();
            if let Some(first) = leaves.first() {
                s.push_str(&format!(
                    "; leaf agents (`{first}`{}) without working memory do not run module calls \
                     with memory buffers or transfers: start leaves with `gspc-leaf --shm \
                     BYTES`, or give the runtime workers of its own with working memory (`gspc \
                     add-workers \"worker:1,67108864\"`)",
                    match leaves.len() {
                        1 => String::new(),
                        n => format!(" and {} more", n - 1),
                    }
                ));
            }
        }
        Some(s)
    }

    fn fail(&mut self, e: AgentError, out: &mut Vec<Command>) {
        self.finish(Err(e), out);
    }

    fn finish(&mut self, result: Result<RunResult, AgentError>, out: &mut Vec<Command>) {
        if self.finished {
            return;
        }
        self.finished = true;
        for (worker, task) in self.sched.cancel_all() {
            out.push(Command::Send {
                worker,
                msg: AgentMsg::Cancel { task },
            });
        }
        let why = match &result {
            Ok(_) => "the job ended without answering".to_string(),
            Err(e) => e.to_string(),
        };
        for (_, client) in self.responses.drain() {
            out.push(Command::Reply {
                client,
                response: Response::Error(why.clone()),
            });
        }
        out.push(Command::Finish(Box::new(result)));
    }
}

mod replay;
#[cfg(test)]
pub(crate) mod tests;

/// A writer that stops taking text past `max` bytes of `text` (it reports an error then, so
/// that a value's `Display` stops early).
struct Cut<'a> {
    text: &'a mut String,
    max: usize,
}

impl std::fmt::Write for Cut<'_> {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.text.push_str(s);
        if self.text.len() > self.max {
            Err(std::fmt::Error)
        } else {
            Ok(())
        }
    }
}
