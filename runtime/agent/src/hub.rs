//! The hub: many jobs over one set of workers, as a pure state machine (no I/O).
//!
//! Each job is a [`Core`] (its engine and its scheduler, which sees every worker of the
//! runtime); the hub owns the cores and the workers' records and translates between the
//! jobs' local numbers and the runtime's global ones:
//! - a task's global id is `job << 40 | local id`, so a worker's answer finds its job;
//! - a job's module definitions get global ids from one counter (`def_base + local id`); the
//!   hub sends them to the workers in an [`AgentMsg::Modules`] when the job is submitted (and
//!   to a worker that joins later), and [`AgentMsg::ForgetModules`] when it ends.
//!
//! Fairness: every job's scheduler has its own window on every worker (the window adapts to
//! the service time of the job's tasks: a few for long tasks, hundreds for no-ops); a worker
//! runs what it holds in arrival order, so with several jobs it alternates between them: a
//! job with one task waits for at most the windows of the others, never for their whole
//! queues. The cores are pumped round-robin, starting after the one pumped first last time.
//!
//! A job's `Core<'b>` borrows its bundle; [`OwnedCore`] keeps both together (the bundle
//! behind an `Arc` whose heap address never changes, the core dropped first).

use std::collections::{BTreeMap, HashMap};
use std::mem::ManuallyDrop;
use std::sync::Arc;
use std::time::Duration;

use pnet_bundle::Bundle;
use pnet_engine::{RunConfig, RunResult};
use pnet_protocol::{AgentMsg, Hello, LeafWorker, ModuleDef, WorkerMsg};
use pnet_stdlib::Value;

use crate::AgentError;
use crate::control::{
    JobOutcome, JobSummary, JobTasks, MemoryStatus, Request, Response, RtWorker, RunningTask,
    Status, TaskLog, WorkerRef,
};
use crate::core::{Command, Core, CoreConfig, Event, TraceRecord};
use crate::journal::{Journal, Op, Record as JRecord};
use crate::memory::SharedTable;
use crate::sched::WorkerId;
use crate::tasks::TaskBook;
use pnet_memory::SegmentInfo;

/// How many ended jobs keep their task records and logs (`gspc tasks`, `trace`, `logs`).
pub const KEEP_TASK_BOOKS: usize = 32;

/// A job's number (the first job of a runtime is 1; `run_job`'s only job is 0).
pub type JobId = u64;

/// Bits of a global task id that hold the job's local task id.
pub const TASK_BITS: u32 = 40;

/// The global id of a job's task.
pub fn global_task(job: JobId, local: u64) -> u64 {
    (job << TASK_BITS) | (local & ((1 << TASK_BITS) - 1))
}

/// The job and local id of a global task id.
pub fn split_task(global: u64) -> (JobId, u64) {
    (global >> TASK_BITS, global & ((1 << TASK_BITS) - 1))
}

/// A [`Core`] together with the bundle it borrows.
pub struct OwnedCore {
    // Declared first: dropped before `bundle`, which it borrows.
    core: ManuallyDrop<Core<'static>>,
    // Never mutated or moved out while `core` lives; the Arc's heap block stays where it is
    // when the OwnedCore moves.
    bundle: Arc<Bundle>,
}

impl Drop for OwnedCore {
    fn drop(&mut self) {
        // SAFETY: dropped exactly once, here, before `bundle` (a field, dropped after this).
        unsafe { ManuallyDrop::drop(&mut self.core) }
    }
}

impl std::fmt::Debug for OwnedCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OwnedCore").finish_non_exhaustive()
    }
}

impl OwnedCore {
    pub fn new(
        bundle: Bundle,
        inputs: &[(String, Vec<Value>)],
        run: &RunConfig,
        cfg: CoreConfig,
    ) -> Result<OwnedCore, AgentError> {
        let bundle = Arc::new(bundle);
        // SAFETY: the bundle lives in the Arc's heap block, which outlives the core: the
        // OwnedCore holds the Arc and drops the core first; no `&'static Bundle` ever leaves
        // this type (the core is only reached through `&mut self` methods below, which
        // return nothing that borrows the bundle).
        let b: &'static Bundle = unsafe { &*Arc::as_ptr(&bundle) };
        let core = Core::new(b, inputs, run, cfg)?;
        Ok(OwnedCore {
            core: ManuallyDrop::new(core),
            bundle,
        })
    }

    pub fn bundle(&self) -> &Bundle {
        &self.bundle
    }

    pub fn module_defs(&self) -> &[ModuleDef] {
        self.core.module_defs()
    }

    pub fn handle(&mut self, ev: Event, out: &mut Vec<Command>) {
        self.core.handle(ev, out)
    }

    pub fn pump(&mut self, out: &mut Vec<Command>) -> bool {
        self.core.pump(out)
    }

    pub fn set_now(&mut self, now: Duration) {
        self.core.set_now(now)
    }

    pub fn set_workers_coming(&mut self, n: usize) {
        self.core.set_workers_coming(n)
    }

    pub fn set_external(&mut self, worker: WorkerId, tasks: u32) {
        self.core.set_external(worker, tasks)
    }

    pub fn load(&self, worker: WorkerId) -> u32 {
        self.core.sched().load(worker)
    }

    pub fn status(&self) -> Status {
        self.core.status()
    }

    /// The counts of [`OwnedCore::status`] without its list of workers (O(1), not O(workers)):
    /// tasks in flight, queued, done, and what the job waits for.
    pub fn counts(&self) -> (u64, u64, u64, Option<String>) {
        let s = self.core.sched();
        (
            s.running() as u64,
            s.queued() as u64,
            self.core.tasks_done(),
            self.core.waiting(),
        )
    }

    pub fn task_transition(&self, worker: WorkerId, task: u64) -> Option<Arc<str>> {
        self.core.task_transition(worker, task)
    }

    pub fn in_flight_tasks(&self) -> Vec<crate::control::TaskInfo> {
        self.core.in_flight_tasks()
    }

    pub fn running_task(&self, worker: WorkerId) -> Option<(u64, Duration)> {
        self.core.running_task(worker)
    }

    /// See [`Core::set_journaling`].
    pub fn set_journaling(&mut self, on: bool) {
        self.core.set_journaling(on)
    }

    /// See [`Core::take_ops`].
    pub fn take_ops(&mut self, into: &mut Vec<(u64, crate::journal::Op)>) {
        self.core.take_ops(into)
    }

    /// See [`Core::tasks_made`].
    pub fn tasks_made(&self) -> u64 {
        self.core.tasks_made()
    }

    /// See [`Core::replay`].
    pub fn replay(&mut self, ops: Vec<(u64, crate::journal::Op)>) -> Result<(), String> {
        self.core.replay(ops)
    }
}

/// Something for the shell to do.
#[derive(Debug)]
pub enum HubCmd {
    Send {
        worker: WorkerId,
        msg: AgentMsg,
    },
    /// An answer for a control client.
    Reply {
        client: u64,
        reply: ClientReply,
    },
    Log(String),
    /// A task has ended (its task id is the global one).
    Trace(TraceRecord),
    /// What a task logged (`task` is the job's own number).
    TaskLog {
        job: JobId,
        task: u64,
        transition: Arc<str>,
        worker: String,
        text: String,
        dropped: u64,
    },
    /// A job has ended (its outcome is also kept for `wait` and `jobs`).
    Ended {
        job: JobId,
        result: Box<Result<RunResult, AgentError>>,
    },
}

/// An answer to a control client: a job's (legacy clients get it as is) or the runtime's.
#[derive(Debug)]
pub enum ClientReply {
    Job(Response),
    Outcome { job: JobId, outcome: JobOutcome },
}

/// A joined worker.
#[derive(Clone, Debug)]
pub struct WorkerInfo {
    pub name: String,
    pub host: String,
    pub pid: u32,
    pub capabilities: Vec<String>,
    pub last_seen: Duration,
    /// The global id of the task it runs now (from its heartbeats).
    pub running: Option<u64>,
    pub done: u64,
    /// A leaf agent's capacity (`WorkerMsg::Capacity`): its window in every job.
    pub capacity: Option<u32>,
    /// A leaf agent's workers as it last reported them (`WorkerMsg::LeafWorkers`), and
    /// where each is in that list by its number.
    pub under: Vec<LeafWorker>,
    under_at: HashMap<u32, usize>,
}

impl WorkerInfo {
    /// The name of the worker `sub` of this leaf agent, as task records show it:
    /// `LEAF/WORKER`.
    pub fn sub_name(&self, sub: u32) -> Option<String> {
        let w = self.under.get(*self.under_at.get(&sub)?)?;
        Some(self.name_of(w))
    }

    /// The name of `w`, a worker of this leaf agent: `LEAF/WORKER`.
    fn name_of(&self, w: &LeafWorker) -> String {
        format!("{}/{}", self.name, w.name)
    }

    /// This leaf agent's workers as `gspc stop` and `gspc remove-workers` name them:
    /// `LEAF/WORKER`, with their hosts and pids.
    pub fn under_refs(&self) -> impl Iterator<Item = WorkerRef> + '_ {
        self.under.iter().map(|u| WorkerRef {
            name: self.name_of(u),
            host: u.host.clone(),
            pid: Some(u.pid),
        })
    }
}

struct Job {
    core: OwnedCore,
    def_base: u32,
    start: Duration,
    more: bool,
    /// The job's own module path (searched first by workers; empty: the runtime's only).
    module_path: Vec<String>,
}

struct Record {
    net: String,
    /// The name given at submission.
    name: Option<String>,
    /// Its tasks (kept when the core emits trace records).
    book: TaskBook,
    submitted_unix: u64,
    start: Duration,
    end: Option<Duration>,
    outcome: Option<JobOutcome>,
    tasks_done: u64,
    /// How many tasks the job made (its tasks are numbered from 0), once it has ended.
    tasks_made: Option<u64>,
}

/// Settings of the hub.
#[derive(Clone, Debug)]
pub struct HubConfig {
    /// The engine settings of every job.
    pub run: RunConfig,
    /// The core settings of every job.
    pub core: CoreConfig,
    /// Prefix log lines with `job N: `.
    pub job_prefix: bool,
    /// Keep at most this many ended jobs for `wait` and `jobs`.
    pub keep_ended: usize,
    /// Tell the workers to forget an ended job's modules (a persistent runtime; a runtime
    /// with one job stops its workers instead).
    pub forget_modules: bool,
}

/// Many jobs over one set of workers.
pub struct Hub {
    cfg: HubConfig,
    jobs: BTreeMap<JobId, Job>,
    records: BTreeMap<JobId, Record>,
    workers: BTreeMap<WorkerId, WorkerInfo>,
    next_job: JobId,
    next_def: u32,
    now: Duration,
    /// Clients waiting for a job's end.
    waiters: HashMap<JobId, Vec<u64>>,
    /// The job pumped first next time.
    cursor: JobId,
    scratch: Vec<Command>,
    workers_coming: usize,
    /// The last pump shared the workers' loads between jobs.
    shared_loads: bool,
    /// The workers whose load (tasks of any job) may have changed since the last pump: a
    /// task was sent to them, they answered, a job holding tasks on them ended (see
    /// [`Hub::share_loads`]).
    load_changed: Vec<WorkerId>,
    /// Each worker's tasks of all jobs as last shared (only the workers holding some).
    load_totals: HashMap<WorkerId, u32>,
    /// How many workers the pumps shared the loads of (tests).
    #[cfg(test)]
    loads_shared: u64,
    /// The ended jobs that keep their task records, in the order they ended (the last
    /// [`KEEP_TASK_BOOKS`]; a runtime keeps thousands of jobs).
    booked: std::collections::VecDeque<JobId>,
    /// The journal of the jobs (a persistent runtime; see [`crate::journal`]).
    journal: Option<Journal>,
    /// Why the journal stopped when it could not be rewritten (its compaction).
    journal_stopped: Option<String>,
    /// Operations taken from a core, on their way to the journal.
    ops: Vec<(u64, Op)>,
    /// The leaf agent and its worker whose messages are being handled
    /// (`WorkerMsg::OfWorker`): task records name that worker.
    sub: Option<(WorkerId, u32)>,
    /// The segments of workers under leaf agents: (leaf, its worker) -> the segment's id in
    /// the global memory (`pnet_protocol::leaf_worker_id`: the runtime's own workers'
    /// segments have their worker's id).
    sub_segments: HashMap<(WorkerId, u32), u32>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("jobs", &self.jobs.len())
            .field("workers", &self.workers.len())
            .finish_non_exhaustive()
    }
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// How a job ended; `types` are the root's out ports (see
/// [`pnet_bundle::result::output_types`]), kept for a job that is done.
fn outcome_of(
    result: &Result<RunResult, AgentError>,
    types: Vec<(String, pnet_stdlib::Type)>,
) -> JobOutcome {
    match result {
        Ok(r) => JobOutcome::Done {
            outputs: r.outputs.clone(),
            firings: r.stats.firings,
            tasks: r.stats.tasks,
            types,
            ending: r.ending.clone(),
        },
        Err(AgentError::Cancelled | AgentError::Terminated) => JobOutcome::Cancelled,
        Err(e) => JobOutcome::Failed {
            code: e.code().to_string(),
            message: e.to_string(),
        },
    }
}

impl Hub {
    /// A hub whose first job gets the number `first_job`.
    pub fn new(cfg: HubConfig, first_job: JobId) -> Hub {
        Hub {
            cfg,
            jobs: BTreeMap::new(),
            records: BTreeMap::new(),
            workers: BTreeMap::new(),
            next_job: first_job,
            next_def: 0,
            now: Duration::ZERO,
            waiters: HashMap::new(),
            cursor: 0,
            scratch: Vec::new(),
            workers_coming: 0,
            shared_loads: false,
            load_changed: Vec::new(),
            load_totals: HashMap::new(),
            #[cfg(test)]
            loads_shared: 0,
            booked: std::collections::VecDeque::new(),
            journal: None,
            journal_stopped: None,
            ops: Vec::new(),
            sub: None,
            sub_segments: HashMap::new(),
        }
    }

    /// Journals the jobs from now on (see [`crate::journal`]).
    pub fn set_journal(&mut self, journal: Journal) {
        for j in self.jobs.values_mut() {
            j.core.set_journaling(true);
        }
        self.journal = Some(journal);
        self.journal_stopped = None;
    }

    /// The journal, if the jobs are journaled.
    pub fn journal(&self) -> Option<&Journal> {
        self.journal.as_ref()
    }

    /// The journal's state for the status: `on`, `off` (none was kept), or `stopped: WHY`
    /// (writing it failed, or rewriting it at a compaction did).
    pub fn journal_state(&self) -> String {
        match (&self.journal, &self.journal_stopped) {
            (Some(j), _) => j
                .error()
                .map_or_else(|| "on".to_string(), |e| format!("stopped: {e}")),
            (None, Some(why)) => format!("stopped: {why}"),
            (None, None) => "off".to_string(),
        }
    }

    /// Appends a record to the journal (if there is one).
    pub fn journal_append(&self, rec: JRecord) {
        if let Some(j) = &self.journal {
            j.append([rec]);
        }
    }

    /// The next job gets the number `next` (a resumed runtime goes on after the journal's).
    pub fn set_next_job(&mut self, next: JobId) {
        self.next_job = self.next_job.max(next);
    }

    /// How many ended jobs are kept.
    pub fn keep_ended(&self) -> usize {
        self.cfg.keep_ended.max(1)
    }

    /// Puts back an ended job from the journal (for `wait` and `jobs`).
    #[allow(clippy::too_many_arguments)]
    pub fn restore_ended(
        &mut self,
        job: JobId,
        net: String,
        name: Option<String>,
        submitted_unix: u64,
        outcome: JobOutcome,
        tasks_done: u64,
        elapsed_ms: u64,
    ) {
        self.next_job = self.next_job.max(job + 1);
        self.records.insert(
            job,
            Record {
                net,
                name,
                book: TaskBook::default(),
                submitted_unix,
                start: Duration::ZERO,
                end: Some(Duration::from_millis(elapsed_ms)),
                tasks_made: match &outcome {
                    JobOutcome::Done { tasks, .. } => Some(*tasks),
                    _ => None,
                },
                outcome: Some(outcome),
                tasks_done,
            },
        );
        self.trim_records();
    }

    /// Brings back a job that had not ended from its submission and journaled operations
    /// (see [`Core::replay`]): its tasks without results are queued again.
    #[allow(clippy::too_many_arguments)]
    pub fn restore_live(
        &mut self,
        job: JobId,
        net: &str,
        bundle: Bundle,
        inputs: &[(String, Vec<Value>)],
        module_path: Vec<String>,
        seed: u64,
        submitted_unix: u64,
        name: Option<String>,
        ops: Vec<(u64, Op)>,
    ) -> Result<(), String> {
        let run = RunConfig {
            seed,
            ..self.cfg.run.clone()
        };
        let mut core = OwnedCore::new(bundle, inputs, &run, self.cfg.core.clone())
            .map_err(|e| e.to_string())?;
        core.set_journaling(self.journal.is_some());
        core.replay(ops)?;
        self.next_job = self.next_job.max(job + 1);
        let mut out = Vec::new();
        self.install(job, net, core, module_path, &mut out);
        if let Some(r) = self.records.get_mut(&job) {
            r.submitted_unix = submitted_unix;
            r.name = name;
        }
        Ok(())
    }

    /// Sets the clock (time since the runtime started).
    pub fn set_now(&mut self, now: Duration) {
        self.now = now;
    }

    pub fn workers(&self) -> &BTreeMap<WorkerId, WorkerInfo> {
        &self.workers
    }

    /// The jobs that have not ended.
    pub fn live_jobs(&self) -> Vec<JobId> {
        self.jobs.keys().copied().collect()
    }

    pub fn job_count(&self) -> usize {
        self.records.len()
    }

    pub fn has_job(&self, job: JobId) -> bool {
        self.jobs.contains_key(&job)
    }

    /// The module definitions of the live jobs with global ids (for Welcomes), and the next
    /// id (a worker welcomed with these gets the later ones in [`Hub::worker_joined`]).
    pub fn live_defs(&self) -> (Vec<ModuleDef>, u32) {
        (self.defs_from(0), self.next_def)
    }

    fn defs_from(&self, from: u32) -> Vec<ModuleDef> {
        let mut out = Vec::new();
        for job in self.jobs.values() {
            for d in job.core.module_defs() {
                let id = job.def_base + d.id;
                if id >= from {
                    out.push(ModuleDef { id, ..d.clone() });
                }
            }
        }
        out
    }

    /// Starts a job.
    pub fn add_job(
        &mut self,
        net: &str,
        bundle: Bundle,
        inputs: &[(String, Vec<Value>)],
        out: &mut Vec<HubCmd>,
    ) -> Result<JobId, AgentError> {
        self.add_job_at(net, bundle, None, inputs, Vec::new(), out)
    }

    /// Starts a job whose modules are looked for along `module_path` first (then along the
    /// workers' path): its definitions go out in [`AgentMsg::ModulesAt`]. `encoded` is the
    /// bundle as submitted, if the caller has it (the journal keeps it; else it is encoded
    /// again for the journal).
    pub fn add_job_at(
        &mut self,
        net: &str,
        bundle: Bundle,
        encoded: Option<Vec<u8>>,
        inputs: &[(String, Vec<Value>)],
        module_path: Vec<String>,
        out: &mut Vec<HubCmd>,
    ) -> Result<JobId, AgentError> {
        let submit = self.journal.as_ref().map(|_| {
            (
                encoded.unwrap_or_else(|| pnet_bundle::format::encode(&bundle).unwrap_or_default()),
                inputs.to_vec(),
            )
        });
        let mut core = OwnedCore::new(bundle, inputs, &self.cfg.run, self.cfg.core.clone())?;
        let id = self.next_job;
        self.next_job += 1;
        if let Some((bundle, inputs)) = submit {
            core.set_journaling(true);
            self.journal_append(JRecord::Submit {
                job: id,
                net: net.to_string(),
                bundle,
                inputs,
                module_path: module_path.clone(),
                submitted_unix: unix_now(),
                seed: self.cfg.run.seed,
            });
        }
        self.install(id, net, core, module_path, out);
        Ok(id)
    }

    /// Makes a job of a core: tells it about the workers, gives its modules global ids.
    fn install(
        &mut self,
        id: JobId,
        net: &str,
        mut core: OwnedCore,
        module_path: Vec<String>,
        out: &mut Vec<HubCmd>,
    ) {
        core.set_workers_coming(self.workers_coming);
        let def_base = self.next_def;
        let n = core.module_defs().len() as u32;
        self.next_def = self.next_def.wrapping_add(n);
        core.set_now(Duration::ZERO);
        for (&wid, w) in &self.workers {
            core.handle(
                Event::Joined {
                    worker: wid,
                    name: w.name.clone(),
                    capabilities: w.capabilities.clone(),
                },
                &mut self.scratch,
            );
            if let Some(capacity) = w.capacity {
                let msg = WorkerMsg::Capacity { capacity };
                core.handle(Event::Msg { worker: wid, msg }, &mut self.scratch);
            }
        }
        if self.shared_loads {
            // The others' tasks on each worker (those whose load changed since are shared
            // again at the next pump).
            for (&w, &t) in &self.load_totals {
                core.set_external(w, t);
            }
        }
        let defs: Vec<ModuleDef> = core
            .module_defs()
            .iter()
            .map(|d| ModuleDef {
                id: def_base + d.id,
                ..d.clone()
            })
            .collect();
        if !defs.is_empty() {
            for &wid in self.workers.keys() {
                let msg = if module_path.is_empty() {
                    AgentMsg::Modules {
                        modules: defs.clone(),
                    }
                } else {
                    AgentMsg::ModulesAt {
                        modules: defs.clone(),
                        module_path: module_path.clone(),
                    }
                };
                out.push(HubCmd::Send { worker: wid, msg });
            }
        }
        self.jobs.insert(
            id,
            Job {
                core,
                def_base,
                start: self.now,
                more: true,
                module_path,
            },
        );
        self.records.insert(
            id,
            Record {
                net: net.to_string(),
                name: None,
                book: TaskBook::default(),
                submitted_unix: unix_now(),
                start: self.now,
                end: None,
                outcome: None,
                tasks_done: 0,
                tasks_made: None,
            },
        );
        self.journal_ops(id);
        let cmds = std::mem::take(&mut self.scratch);
        self.translate(id, cmds, out);
        self.trim_records();
    }

    /// Journals the operations a job's core made.
    fn journal_ops(&mut self, job: JobId) {
        let (Some(jr), Some(j)) = (&self.journal, self.jobs.get_mut(&job)) else {
            return;
        };
        j.core.take_ops(&mut self.ops);
        if !self.ops.is_empty() {
            jr.append(
                self.ops
                    .drain(..)
                    .map(|(firings, op)| JRecord::Op { job, firings, op }),
            );
        }
    }

    /// Names a job (`gspc submit --name`).
    pub fn name_job(&mut self, job: JobId, name: String) {
        if self.records.contains_key(&job) {
            self.journal_append(JRecord::Name {
                job,
                name: name.clone(),
            });
        }
        if let Some(r) = self.records.get_mut(&job) {
            r.name = Some(name);
        }
    }

    /// The task a worker runs now, of any job: workers run what they hold in arrival
    /// order, so the one sent first of the oldest ones of each job.
    fn running_on(&self, worker: WorkerId) -> Option<(JobId, u64)> {
        self.jobs
            .iter()
            .filter_map(|(&id, j)| {
                j.core
                    .running_task(worker)
                    .map(|(t, sent)| (j.start + sent, id, t))
            })
            .min()
            .map(|(_, id, t)| (id, t))
    }

    /// A job's status with `tasks_running` the tasks started on a worker and `tasks_sent`
    /// the others in flight (the core counts every task in flight as running).
    fn fix_status(&self, job: JobId, s: &mut Status) {
        let running = self
            .workers
            .iter()
            .map(|(&w, info)| match info.capacity {
                // A leaf agent runs a task on each of its busy workers.
                Some(_) => (info.under.iter())
                    .filter(|u| u.running.is_some_and(|g| split_task(g).0 == job))
                    .count(),
                None => usize::from(self.running_on(w).is_some_and(|(j, _)| j == job)),
            })
            .sum::<usize>() as u64;
        let in_flight = s.tasks_running + s.tasks_sent;
        s.tasks_running = running.min(in_flight);
        s.tasks_sent = in_flight - s.tasks_running;
    }

    /// A job's tasks: the ended ones kept and those in flight.
    pub fn tasks(&self, job: JobId) -> Option<JobTasks> {
        let r = self.records.get(&job)?;
        let (mut live, queued) = match self.jobs.get(&job) {
            Some(j) => (j.core.in_flight_tasks(), j.core.counts().1),
            None => (Vec::new(), 0),
        };
        for t in &mut live {
            match self.workers.get(&t.worker_id) {
                // A leaf agent says which of its workers runs which task.
                Some(w) if w.capacity.is_some() => {
                    let g = global_task(job, t.task);
                    if let Some(u) = w.under.iter().find(|u| u.running == Some(g)) {
                        t.state = "running".into();
                        t.worker = w.name_of(u);
                        if let Some(id) = pnet_protocol::leaf_worker_id(t.worker_id, u.worker) {
                            t.worker_id = id;
                        }
                    }
                }
                _ => {
                    if self.running_on(t.worker_id) == Some((job, t.task)) {
                        t.state = "running".into();
                    }
                }
            }
        }
        Some(r.book.tasks(job, live, queued))
    }

    /// The logs kept of a job's tasks (one, or all); an error for a job or task that never
    /// was.
    pub fn logs(&self, job: JobId, task: Option<u64>) -> Result<Vec<TaskLog>, String> {
        let r = self
            .records
            .get(&job)
            .ok_or_else(|| format!("there is no job {job} (see `gspc jobs`)"))?;
        let made = match self.jobs.get(&job) {
            Some(j) => Some(j.core.tasks_made()),
            None => r.tasks_made,
        };
        if let (Some(t), Some(n)) = (task, made)
            && t >= n
        {
            return Err(match n {
                0 => format!("job {job} has no task {t} (it has made no tasks)"),
                _ => format!(
                    "job {job} has no task {t} (its tasks are numbered 0 to {})",
                    n - 1
                ),
            });
        }
        Ok(r.book.logs(task))
    }

    fn trim_records(&mut self) {
        while self.records.len() > self.cfg.keep_ended.max(1) + self.jobs.len() {
            let Some(old) = self
                .records
                .iter()
                .find(|(_, r)| r.outcome.is_some())
                .map(|(k, _)| *k)
            else {
                break;
            };
            self.records.remove(&old);
        }
    }

    /// A worker passed the handshake; its Welcome held the definitions below `defs_upto`.
    pub fn worker_joined(
        &mut self,
        worker: WorkerId,
        hello: &Hello,
        defs_upto: u32,
        out: &mut Vec<HubCmd>,
    ) {
        self.workers.insert(
            worker,
            WorkerInfo {
                name: hello.name.clone(),
                host: hello.host.clone(),
                pid: hello.pid,
                capabilities: hello.capabilities.clone(),
                last_seen: self.now,
                running: None,
                done: 0,
                capacity: None,
                under: Vec::new(),
                under_at: HashMap::new(),
            },
        );
        let late = self.defs_from(defs_upto);
        if !late.is_empty() {
            out.push(HubCmd::Send {
                worker,
                msg: AgentMsg::Modules { modules: late },
            });
        }
        // The Welcome gave no job's own module path: the jobs that have one say it again.
        for job in self.jobs.values().filter(|j| !j.module_path.is_empty()) {
            let modules: Vec<ModuleDef> = job
                .core
                .module_defs()
                .iter()
                .map(|d| ModuleDef {
                    id: job.def_base + d.id,
                    ..d.clone()
                })
                .collect();
            if !modules.is_empty() {
                out.push(HubCmd::Send {
                    worker,
                    msg: AgentMsg::ModulesAt {
                        modules,
                        module_path: job.module_path.clone(),
                    },
                });
            }
        }
        let ids: Vec<JobId> = self.jobs.keys().copied().collect();
        for id in ids {
            self.send_event(
                id,
                Event::Joined {
                    worker,
                    name: hello.name.clone(),
                    capabilities: hello.capabilities.clone(),
                },
                out,
            );
        }
    }

    /// A worker is gone (lost, or removed): its tasks are queued again in their jobs, its
    /// segment leaves the global memory (the allocations with parts in it break).
    pub fn worker_lost(
        &mut self,
        worker: WorkerId,
        reason: &str,
        exit: Option<&str>,
        out: &mut Vec<HubCmd>,
    ) {
        let Some(info) = self.workers.remove(&worker) else {
            return;
        };
        self.load_totals.remove(&worker);
        self.remove_segment(worker, &info.name, out);
        // A leaf agent's workers' segments go with it.
        let subs: Vec<(u32, u32)> = (self.sub_segments.iter())
            .filter(|((leaf, _), _)| *leaf == worker)
            .map(|(&(_, sub), &id)| (sub, id))
            .collect();
        for (sub, id) in subs {
            self.sub_segments.remove(&(worker, sub));
            self.remove_segment(id, &format!("{}/#{sub}", info.name), out);
        }
        let ids: Vec<JobId> = self.jobs.keys().copied().collect();
        for id in ids {
            self.send_event(
                id,
                Event::Lost {
                    worker,
                    reason: reason.to_string(),
                    exit: exit.map(str::to_string),
                },
                out,
            );
        }
    }

    /// How many lost workers are being restarted: jobs wait for them rather than fail for
    /// want of a worker.
    pub fn set_workers_coming(&mut self, n: usize) {
        for j in self.jobs.values_mut() {
            j.core.set_workers_coming(n);
            j.more = true;
        }
        self.workers_coming = n;
    }

    /// The agent's global memory (shared by every job).
    pub fn memory(&self) -> &SharedTable {
        &self.cfg.core.memory
    }

    /// The segment of the worker `sub` under the leaf agent `leaf`: its number is the one
    /// the leaf told the worker (`pnet_protocol::leaf_worker_id`), unique under the root.
    fn add_sub_segment(
        &mut self,
        leaf: WorkerId,
        sub: u32,
        mut seg: SegmentInfo,
        out: &mut Vec<HubCmd>,
    ) {
        let info = self.workers.get(&leaf);
        let name = info
            .and_then(|w| w.sub_name(sub))
            .or_else(|| info.map(|w| format!("{}/#{sub}", w.name)))
            .unwrap_or_else(|| "?".into());
        let Some(id) = pnet_protocol::leaf_worker_id(leaf, sub) else {
            out.push(HubCmd::Log(format!(
                "worker `{name}` under a leaf agent offers working memory, but has no number \
                 of its own here: its memory stays out of the global memory"
            )));
            return;
        };
        if seg.id != id {
            out.push(HubCmd::Log(format!(
                "worker `{name}` reported its segment as number {}; using {id}",
                seg.id
            )));
            seg.id = id;
        }
        self.sub_segments.insert((leaf, sub), id);
        self.install_segment(id, &name, seg, out);
    }

    /// The segments of a leaf agent's workers it no longer reports: gone from the global
    /// memory.
    fn drop_sub_segments(&mut self, leaf: WorkerId, out: &mut Vec<HubCmd>) {
        let Some(info) = self.workers.get(&leaf) else {
            return;
        };
        let name = info.name.clone();
        let gone: Vec<(u32, u32)> = (self.sub_segments.iter())
            .filter(|((l, sub), _)| *l == leaf && !info.under_at.contains_key(sub))
            .map(|(&(_, sub), &id)| (sub, id))
            .collect();
        for (sub, id) in gone {
            self.sub_segments.remove(&(leaf, sub));
            self.remove_segment(id, &format!("{name}/#{sub}"), out);
        }
    }

    fn add_segment(&mut self, worker: WorkerId, mut seg: SegmentInfo, out: &mut Vec<HubCmd>) {
        let name = self
            .workers
            .get(&worker)
            .map_or_else(|| "?".to_string(), |w| w.name.clone());
        if seg.id != worker {
            out.push(HubCmd::Log(format!(
                "worker {worker} `{name}` reported its segment as number {}; using {worker}",
                seg.id
            )));
            seg.id = worker;
        }
        self.install_segment(worker, &name, seg, out);
    }

    /// Puts the segment `id` (of the worker `name`) into the global memory.
    fn install_segment(&mut self, id: u32, name: &str, seg: SegmentInfo, out: &mut Vec<HubCmd>) {
        out.push(HubCmd::Log(format!(
            "worker {id} `{name}` offers {} of working memory on host `{}` ({}, memory \
             server {})",
            crate::memory::human_bytes(seg.size),
            seg.host,
            seg.shm_path,
            seg.server
        )));
        let mut table = self.cfg.core.memory.lock();
        if table.segment(id).is_some() {
            // A second report replaces the first (forced: it is the same worker).
            let _ = table.remove_segment(id, true);
        }
        table.add_segment(seg);
    }

    fn remove_segment(&mut self, worker: WorkerId, name: &str, out: &mut Vec<HubCmd>) {
        let mut table = self.cfg.core.memory.lock();
        if table.segment(worker).is_none() {
            return;
        }
        if let Err(e) = table.remove_segment(worker, false) {
            // Allocations live in it: they are lost with the worker.
            out.push(HubCmd::Log(format!(
                "worker {worker} `{name}` is gone with its working memory: the global \
                 allocations with parts in it are lost ({e})"
            )));
            if let Err(e) = table.remove_segment(worker, true) {
                out.push(HubCmd::Log(format!(
                    "cannot remove the segment of worker {worker} `{name}`: {e}"
                )));
            }
        } else {
            out.push(HubCmd::Log(format!(
                "worker {worker} `{name}`: its working memory left the global memory"
            )));
        }
    }

    /// The memory statistics (`gspc status`).
    pub fn memory_status(&self) -> MemoryStatus {
        crate::memory::memory_status(&self.cfg.core.memory.lock().stats())
    }

    /// Messages from a worker.
    pub fn worker_msgs(&mut self, worker: WorkerId, msgs: Vec<WorkerMsg>, out: &mut Vec<HubCmd>) {
        let now = self.now;
        let Some(info) = self.workers.get_mut(&worker) else {
            return;
        };
        info.last_seen = now;
        if msgs
            .iter()
            .any(|m| !matches!(m, WorkerMsg::Heartbeat { .. }))
        {
            self.load_changed.push(worker);
        }
        for msg in msgs {
            let (task, local) = match msg {
                WorkerMsg::Heartbeat { running } => {
                    let sub = self.sub.filter(|s| s.0 == worker).map(|s| s.1);
                    if let Some(info) = self.workers.get_mut(&worker) {
                        match sub {
                            // A leaf agent says when a worker of its starts a task (or is
                            // idle), between its reports of them all.
                            Some(sub) => {
                                if let Some(&k) = info.under_at.get(&sub)
                                    && let Some(u) = info.under.get_mut(k)
                                {
                                    u.running = running;
                                }
                            }
                            None => info.running = running,
                        }
                    }
                    continue;
                }
                WorkerMsg::Hello(_) | WorkerMsg::LeafHello(_) => continue,
                // A leaf agent's messages (see `pnet_protocol::LeafHello`).
                WorkerMsg::Batch(msgs) => {
                    self.worker_msgs(worker, msgs, out);
                    continue;
                }
                WorkerMsg::Capacity { capacity } => {
                    if let Some(info) = self.workers.get_mut(&worker) {
                        info.capacity = Some(capacity);
                    }
                    let ids: Vec<JobId> = self.jobs.keys().copied().collect();
                    for job in ids {
                        let msg = WorkerMsg::Capacity { capacity };
                        self.send_event(job, Event::Msg { worker, msg }, out);
                    }
                    continue;
                }
                WorkerMsg::Retried { task } => {
                    let (_, l) = split_task(task);
                    (task, WorkerMsg::Retried { task: l })
                }
                WorkerMsg::LeafWorkers(under) => {
                    if let Some(info) = self.workers.get_mut(&worker) {
                        info.under_at = (under.iter().enumerate())
                            .map(|(k, u)| (u.worker, k))
                            .collect();
                        info.under = under;
                    }
                    self.drop_sub_segments(worker, out);
                    continue;
                }
                WorkerMsg::OfWorker { worker: sub, msgs } => {
                    let outer = self.sub.replace((worker, sub));
                    self.worker_msgs(worker, msgs, out);
                    self.sub = outer;
                    continue;
                }
                WorkerMsg::Memory(seg) => {
                    match self.sub {
                        // A worker under a leaf agent.
                        Some((leaf, sub)) if leaf == worker => {
                            self.add_sub_segment(leaf, sub, seg, out)
                        }
                        _ => self.add_segment(worker, seg, out),
                    }
                    continue;
                }
                WorkerMsg::Done { task, outputs } => {
                    if let Some(info) = self.workers.get_mut(&worker) {
                        info.done += 1;
                        if info.running == Some(task) {
                            info.running = None;
                        }
                    }
                    let (_, l) = split_task(task);
                    (task, WorkerMsg::Done { task: l, outputs })
                }
                WorkerMsg::DoneAt {
                    task,
                    outputs,
                    times,
                } => {
                    if let Some(info) = self.workers.get_mut(&worker) {
                        info.done += 1;
                        if info.running == Some(task) {
                            info.running = None;
                        }
                    }
                    let (_, l) = split_task(task);
                    let msg = WorkerMsg::DoneAt {
                        task: l,
                        outputs,
                        times,
                    };
                    (task, msg)
                }
                WorkerMsg::Failed { task, message } => {
                    let (_, l) = split_task(task);
                    (task, WorkerMsg::Failed { task: l, message })
                }
                WorkerMsg::FailedAt {
                    task,
                    message,
                    times,
                } => {
                    let (_, l) = split_task(task);
                    let msg = WorkerMsg::FailedAt {
                        task: l,
                        message,
                        times,
                    };
                    (task, msg)
                }
                WorkerMsg::Log {
                    task,
                    text,
                    dropped,
                } => {
                    let (_, l) = split_task(task);
                    let msg = WorkerMsg::Log {
                        task: l,
                        text,
                        dropped,
                    };
                    (task, msg)
                }
                WorkerMsg::Cancelled { task } => {
                    let (_, l) = split_task(task);
                    (task, WorkerMsg::Cancelled { task: l })
                }
                WorkerMsg::Returned { tasks, kept } => {
                    // To the job that asked (a steal names the tasks of one job).
                    let mut by_job: BTreeMap<JobId, (Vec<u64>, Vec<u64>)> = BTreeMap::new();
                    for t in tasks {
                        let (j, l) = split_task(t);
                        by_job.entry(j).or_default().0.push(l);
                    }
                    for t in kept {
                        let (j, l) = split_task(t);
                        by_job.entry(j).or_default().1.push(l);
                    }
                    for (job, (tasks, kept)) in by_job {
                        if self.jobs.contains_key(&job) {
                            let msg = WorkerMsg::Returned { tasks, kept };
                            self.send_event(job, Event::Msg { worker, msg }, out);
                        }
                    }
                    continue;
                }
            };
            let (job, _) = split_task(task);
            if self.jobs.contains_key(&job) {
                self.send_event(job, Event::Msg { worker, msg: local }, out);
            }
        }
    }

    /// A control request of a legacy client for a job (put-token, status, close, cancel).
    pub fn job_control(
        &mut self,
        job: JobId,
        client: u64,
        request: Request,
        out: &mut Vec<HubCmd>,
    ) {
        let answer = match &request {
            Request::Tasks => Some(self.tasks(job).map_or_else(
                || Response::Error(format!("there is no job {job}")),
                Response::Tasks,
            )),
            Request::Logs { task } => Some(
                self.logs(job, *task)
                    .map_or_else(Response::Error, Response::Logs),
            ),
            _ => None,
        };
        if let Some(a) = answer {
            out.push(HubCmd::Reply {
                client,
                reply: ClientReply::Job(a),
            });
            return;
        }
        if !self.jobs.contains_key(&job) {
            let msg = match self.records.get(&job) {
                Some(_) => format!("job {job} has ended"),
                None => format!("there is no job {job}"),
            };
            out.push(HubCmd::Reply {
                client,
                reply: ClientReply::Job(Response::Error(msg)),
            });
            return;
        }
        self.send_event(job, Event::Control { client, request }, out);
    }

    /// Cancels a job; false if it is not running.
    pub fn cancel_job(&mut self, job: JobId, out: &mut Vec<HubCmd>) -> bool {
        if !self.jobs.contains_key(&job) {
            return false;
        }
        self.send_event(job, Event::Cancel, out);
        true
    }

    /// Cancels every job (Ctrl-C, stop); returns their numbers.
    pub fn cancel_all(&mut self, out: &mut Vec<HubCmd>) -> Vec<JobId> {
        let ids: Vec<JobId> = self.jobs.keys().copied().collect();
        for &id in &ids {
            self.send_event(id, Event::Cancel, out);
        }
        ids
    }

    /// The workers that will ever join have joined.
    pub fn join_timeout(&mut self, out: &mut Vec<HubCmd>) {
        let ids: Vec<JobId> = self.jobs.keys().copied().collect();
        for id in ids {
            self.send_event(id, Event::JoinTimeout, out);
        }
    }

    /// Answers `client` when the job has ended (at once if it has).
    pub fn wait_for(
        &mut self,
        job: JobId,
        client: u64,
        out: &mut Vec<HubCmd>,
    ) -> Result<(), String> {
        match self.records.get(&job) {
            None => Err(format!("there is no job {job} (see `gspc jobs`)")),
            Some(r) => {
                if let Some(o) = &r.outcome {
                    out.push(HubCmd::Reply {
                        client,
                        reply: ClientReply::Outcome {
                            job,
                            outcome: o.clone(),
                        },
                    });
                } else {
                    self.waiters.entry(job).or_default().push(client);
                }
                Ok(())
            }
        }
    }

    /// A client went away: it no longer waits.
    pub fn client_closed(&mut self, client: u64) {
        for v in self.waiters.values_mut() {
            v.retain(|&c| c != client);
        }
        self.waiters.retain(|_, v| !v.is_empty());
    }

    fn send_event(&mut self, job: JobId, ev: Event, out: &mut Vec<HubCmd>) {
        let Some(j) = self.jobs.get_mut(&job) else {
            return;
        };
        j.core.set_now(self.now.saturating_sub(j.start));
        j.core.handle(ev, &mut self.scratch);
        j.more = true;
        self.journal_ops(job);
        let cmds = std::mem::take(&mut self.scratch);
        self.translate(job, cmds, out);
    }

    /// Pumps every job that has something to do, round-robin; returns whether some job has
    /// more to do right away.
    pub fn pump(&mut self, out: &mut Vec<HubCmd>) -> bool {
        self.share_loads();
        let ids: Vec<JobId> = self
            .jobs
            .range(self.cursor..)
            .chain(self.jobs.range(..self.cursor))
            .filter(|(_, j)| j.more)
            .map(|(k, _)| *k)
            .collect();
        if let Some(&first) = ids.first() {
            self.cursor = first + 1;
        }
        let mut any = false;
        for id in ids {
            let Some(j) = self.jobs.get_mut(&id) else {
                continue;
            };
            j.core.set_now(self.now.saturating_sub(j.start));
            j.more = j.core.pump(&mut self.scratch);
            any |= j.more;
            self.journal_ops(id);
            let cmds = std::mem::take(&mut self.scratch);
            self.translate(id, cmds, out);
        }
        any
    }

    /// With several jobs, tells each job's scheduler how many tasks of the other jobs every
    /// worker holds (so that stealing and placement see workers busy with other jobs).
    ///
    /// Only the workers whose load may have changed since the last pump are looked at (a
    /// worker's load changes when a task is sent to it, when it answers, when a job with
    /// tasks on it ends), so a pump costs O(changed workers x jobs), not O(workers x jobs):
    /// with 30 jobs over 5,000 workers that was 300,000 look-ups per pump. All workers are
    /// looked at once, when a second job starts.
    fn share_loads(&mut self) {
        let shared = self.jobs.len() >= 2;
        if !shared && !self.shared_loads {
            self.load_changed.clear();
            self.load_totals.clear();
            return;
        }
        let mut changed = std::mem::take(&mut self.load_changed);
        if shared && !self.shared_loads {
            changed.clear();
            changed.extend(self.workers.keys());
        } else {
            changed.sort_unstable();
            changed.dedup();
        }
        self.shared_loads = shared;
        #[cfg(test)]
        {
            self.loads_shared += changed.len() as u64;
        }
        for &w in &changed {
            if !self.workers.contains_key(&w) {
                self.load_totals.remove(&w);
                continue;
            }
            let total: u32 = self.jobs.values().map(|j| j.core.load(w)).sum();
            for j in self.jobs.values_mut() {
                let own = j.core.load(w);
                j.core.set_external(w, total - own);
            }
            if total > 0 {
                self.load_totals.insert(w, total);
            } else {
                self.load_totals.remove(&w);
            }
        }
        changed.clear();
        self.load_changed = changed;
        #[cfg(test)]
        self.check_shared_loads();
    }

    /// Every worker's shared total is its tasks of all jobs (tests).
    #[cfg(test)]
    fn check_shared_loads(&self) {
        if !self.shared_loads {
            return;
        }
        for &w in self.workers.keys() {
            let total: u32 = self.jobs.values().map(|j| j.core.load(w)).sum();
            let kept = self.load_totals.get(&w).copied().unwrap_or(0);
            assert_eq!(
                kept, total,
                "worker {w}: shared total {kept}, holds {total}"
            );
        }
    }

    fn translate(&mut self, job: JobId, mut cmds: Vec<Command>, out: &mut Vec<HubCmd>) {
        let base = self.jobs.get(&job).map_or(0, |j| j.def_base);
        for cmd in cmds.drain(..) {
            match cmd {
                Command::Send { worker, msg } => {
                    let msg = match msg {
                        AgentMsg::Run(mut runs) => {
                            for r in &mut runs {
                                r.task = global_task(job, r.task);
                                r.module = base.wrapping_add(r.module);
                            }
                            self.load_changed.push(worker);
                            AgentMsg::Run(runs)
                        }
                        AgentMsg::Cancel { task } => AgentMsg::Cancel {
                            task: global_task(job, task),
                        },
                        AgentMsg::Steal { tasks } => AgentMsg::Steal {
                            tasks: tasks.into_iter().map(|t| global_task(job, t)).collect(),
                        },
                        other => other,
                    };
                    out.push(HubCmd::Send { worker, msg });
                }
                Command::Reply {
                    client,
                    mut response,
                } => {
                    if let Response::Status(s) = &mut response {
                        self.fix_status(job, s);
                    }
                    out.push(HubCmd::Reply {
                        client,
                        reply: ClientReply::Job(response),
                    })
                }
                Command::Log(m) => {
                    if self.cfg.job_prefix {
                        out.push(HubCmd::Log(format!("job {job}: {m}")));
                    } else {
                        out.push(HubCmd::Log(m));
                    }
                }
                Command::Trace(mut r) => {
                    if let Some(rec) = self.records.get_mut(&job) {
                        let info = self.workers.get(&r.worker);
                        let name = info.map_or("(lost)", |w| w.name.as_str());
                        match (self.sub, info) {
                            // A worker under a leaf agent: `LEAF/WORKER`, in a lane of its own
                            // in a trace (its number under the root).
                            (Some((leaf, sub)), Some(w)) if leaf == r.worker => {
                                let under = w.sub_name(sub).unwrap_or_else(|| name.to_string());
                                let lane = pnet_protocol::leaf_worker_id(leaf, sub).unwrap_or(leaf);
                                let at = std::mem::replace(&mut r.worker, lane);
                                rec.book.ended(&r, &under);
                                r.worker = at;
                            }
                            _ => rec.book.ended(&r, name),
                        }
                    }
                    r.task = global_task(job, r.task);
                    out.push(HubCmd::Trace(r));
                }
                Command::TaskLog {
                    worker,
                    task,
                    name,
                    text,
                    dropped,
                } => {
                    let info = self.workers.get(&worker);
                    let plain = info.map_or_else(|| format!("#{worker}"), |w| w.name.clone());
                    // A worker under a leaf agent: `LEAF/WORKER`, its own lane.
                    let (lane, wname) = match (self.sub, info) {
                        (Some((leaf, sub)), Some(w)) if leaf == worker => (
                            pnet_protocol::leaf_worker_id(leaf, sub).unwrap_or(leaf),
                            w.sub_name(sub).unwrap_or_else(|| plain.clone()),
                        ),
                        _ => (worker, plain),
                    };
                    if let Some(rec) = self.records.get_mut(&job) {
                        rec.book.worker(lane, &wname);
                        rec.book.log(task, &name, &wname, text.clone(), dropped);
                    }
                    out.push(HubCmd::TaskLog {
                        job,
                        task,
                        transition: name,
                        worker: wname,
                        text,
                        dropped,
                    });
                }
                Command::Finish(result) => self.ended(job, result, out),
            }
        }
        self.scratch = cmds;
    }

    fn ended(
        &mut self,
        job: JobId,
        result: Box<Result<RunResult, AgentError>>,
        out: &mut Vec<HubCmd>,
    ) {
        let Some(j) = self.jobs.remove(&job) else {
            return;
        };
        // Its tasks leave the workers' loads: every worker holding some is in the totals,
        // or has changed since they were shared.
        if self.shared_loads {
            self.load_changed.extend(self.load_totals.keys());
        }
        let ids: Vec<u32> = j
            .core
            .module_defs()
            .iter()
            .map(|d| j.def_base + d.id)
            .collect();
        if !ids.is_empty() && self.cfg.forget_modules {
            for &wid in self.workers.keys() {
                out.push(HubCmd::Send {
                    worker: wid,
                    msg: AgentMsg::ForgetModules { ids: ids.clone() },
                });
            }
        }
        let outcome = outcome_of(&result, pnet_bundle::result::output_types(j.core.bundle()));
        let (_, _, done, _) = j.core.counts();
        if self.journal.is_some() {
            let start = self.records.get(&job).map_or(self.now, |r| r.start);
            self.journal_append(JRecord::End {
                job,
                outcome: outcome.clone(),
                tasks_done: done,
                elapsed_ms: self.now.saturating_sub(start).as_millis() as u64,
            });
        }
        if let Some(r) = self.records.get_mut(&job) {
            r.end = Some(self.now);
            r.outcome = Some(outcome.clone());
            r.tasks_done = done;
            r.tasks_made = Some(j.core.tasks_made());
        }
        self.booked.push_back(job);
        while self.booked.len() > KEEP_TASK_BOOKS {
            if let Some(old) = self.booked.pop_front()
                && let Some(r) = self.records.get_mut(&old)
            {
                r.book = TaskBook::default();
            }
        }
        for client in self.waiters.remove(&job).unwrap_or_default() {
            out.push(HubCmd::Reply {
                client,
                reply: ClientReply::Outcome {
                    job,
                    outcome: outcome.clone(),
                },
            });
        }
        out.push(HubCmd::Ended { job, result });
        self.trim_records();
        if self.jobs.is_empty()
            && self
                .journal
                .as_ref()
                .is_some_and(|j| j.appended() >= j.compact_at())
        {
            self.compact_journal(out);
        }
    }

    /// With no job running, rewrites the journal as the ended jobs kept (one record each).
    fn compact_journal(&mut self, out: &mut Vec<HubCmd>) {
        let Some(old) = self.journal.take() else {
            return;
        };
        let path = old.path().to_path_buf();
        let compact_at = old.compact_at();
        drop(old);
        let records: Vec<JRecord> = self
            .records
            .iter()
            .filter_map(|(&job, r)| {
                Some(JRecord::Ended {
                    job,
                    net: r.net.clone(),
                    name: r.name.clone(),
                    submitted_unix: r.submitted_unix,
                    outcome: r.outcome.clone()?,
                    tasks_done: r.tasks_done,
                    elapsed_ms: r.end?.saturating_sub(r.start).as_millis() as u64,
                })
            })
            .collect();
        match Journal::create(&path, &records) {
            Ok(mut j) => {
                j.set_compact_at(compact_at);
                self.journal = Some(j)
            }
            Err(e) => {
                out.push(HubCmd::Log(format!(
                    "cannot rewrite the journal {}: {e}; the jobs are no longer journaled",
                    path.display()
                )));
                self.journal_stopped = Some(format!(
                    "cannot rewrite the journal {}: {e} (the jobs from then on are not \
                     journaled)",
                    path.display()
                ));
            }
        }
    }

    /// The jobs for `gspc jobs`, oldest first.
    pub fn jobs(&self) -> Vec<JobSummary> {
        // The tasks running per job, in one pass over the workers (not one per job); a leaf
        // agent runs a task on each of its busy workers (as in `fix_status`).
        let mut running: HashMap<JobId, u64> = HashMap::new();
        if !self.jobs.is_empty() {
            for (&w, info) in &self.workers {
                match info.capacity {
                    Some(_) => {
                        for g in info.under.iter().filter_map(|u| u.running) {
                            *running.entry(split_task(g).0).or_default() += 1;
                        }
                    }
                    None => {
                        if let Some((j, _)) = self.running_on(w) {
                            *running.entry(j).or_default() += 1;
                        }
                    }
                }
            }
        }
        self.records
            .iter()
            .map(|(&id, r)| {
                let (running, sent, queued, done, waiting) = match self.jobs.get(&id) {
                    Some(j) => {
                        let (in_flight, queued, done, waiting) = j.core.counts();
                        let running = running.get(&id).copied().unwrap_or(0).min(in_flight);
                        (running, in_flight - running, queued, done, waiting)
                    }
                    None => (0, 0, 0, r.tasks_done, None),
                };
                JobSummary {
                    id,
                    net: r.net.clone(),
                    name: r.name.clone(),
                    error: match &r.outcome {
                        Some(JobOutcome::Failed { message, .. }) => Some(message.clone()),
                        _ => None,
                    },
                    tasks_sent: sent,
                    state: r
                        .outcome
                        .as_ref()
                        .map_or("running", |o| o.state())
                        .to_string(),
                    submitted_unix: r.submitted_unix,
                    elapsed_ms: r
                        .end
                        .unwrap_or(self.now)
                        .saturating_sub(r.start)
                        .as_millis() as u64,
                    tasks_running: running,
                    tasks_queued: queued,
                    tasks_done: done,
                    waiting,
                }
            })
            .collect()
    }

    /// The status of the joined workers.
    pub fn worker_status(&self) -> Vec<(WorkerId, RtWorker)> {
        self.workers
            .keys()
            .filter_map(|&wid| Some((wid, self.worker_status_of(wid)?)))
            .collect()
    }

    /// The status of one joined worker.
    pub fn worker_status_of(&self, wid: WorkerId) -> Option<RtWorker> {
        let w = self.workers.get(&wid)?;
        let running_task = |g: u64| {
            let (job, local) = split_task(g);
            let j = self.jobs.get(&job)?;
            let t = j.core.task_transition(wid, local)?;
            Some(RunningTask {
                job,
                transition: t.to_string(),
            })
        };
        let running = w.running.and_then(running_task);
        // A leaf agent's workers as it last reported them (at once when one joins or is lost;
        // their heartbeats' ages are the leaf's: it declares a silent one lost).
        let under = w
            .under
            .iter()
            .map(|u| RtWorker {
                name: u.name.clone(),
                host: u.host.clone(),
                pid: Some(u.pid),
                capabilities: u.capabilities.clone(),
                state: "up".into(),
                heartbeat_age_ms: Some(u.heartbeat_age_ms),
                running: u.running.and_then(running_task),
                in_flight: u.in_flight,
                done: u.done,
                capacity: None,
                workers: Vec::new(),
            })
            .collect();
        // The scheduler's count, not a job's whole status per worker (O(N²)).
        let in_flight = self.jobs.values().map(|j| j.core.load(wid)).sum();
        Some(RtWorker {
            name: w.name.clone(),
            host: w.host.clone(),
            pid: Some(w.pid),
            capabilities: w.capabilities.clone(),
            state: "up".into(),
            heartbeat_age_ms: Some(self.now.saturating_sub(w.last_seen).as_millis() as u64),
            running,
            in_flight,
            done: w.done,
            capacity: w.capacity,
            workers: under,
        })
    }

    /// The status of one job's core (legacy clients, progress line).
    pub fn job_status(&self, job: JobId) -> Option<Status> {
        let mut s = self.jobs.get(&job)?.core.status();
        self.fix_status(job, &mut s);
        Some(s)
    }
}

#[cfg(test)]
mod tests;
