//! The scheduler: workers, a queue of pending tasks per task class, placement by
//! capabilities, a window of tasks in flight per worker, retries after a lost worker, and
//! eureka cancellation. No I/O and no engine: the [`crate::core`] feeds it.
//!
//! Placement (as in GPI-Space): a worker runs a task only if it has every mandatory required
//! capability of the task's transition and function; for a `modules` body it must also have
//! a target of the preferences (the first one it has picks the implementation) or there must
//! be an implementation without a target. Among fitting workers with room in their window,
//! the one with the fewest capabilities wins (score 1/(|caps|+1)), ties go to the least
//! loaded one, then to the lowest worker id.
//!
//! Windows: each worker gets up to `window` tasks in flight (it runs them one at a time, in
//! order, and queues the rest), so that a round trip does not leave it idle. A worker starts
//! with a window of one task (a long task is never queued behind another while a fitting
//! worker idles, and the first worker to join does not take the first window of every
//! task); the window then adapts to the measured service time of the worker's tasks:
//! `ceil(latency_target / service)` clamped to `[min_window, max_window]`, so no-op tasks are
//! pipelined hundreds deep while tasks of a few milliseconds or more go one at a time.
//!
//! Work stealing (as GPI-Space's scheduler does): a fitting worker with nothing in flight
//! asks a busy worker for a task it holds queued but has not started ([`Sched::steal`]);
//! the worker gives back what it had not started ([`Sched::returned`]) and the task goes to
//! the front of its queue, so the idle worker gets it at the next dispatch. Queues whose
//! work is known to be shorter than a round trip ([`STEAL_MIN_WORK`]) are not stolen from.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use pnet_stdlib::Value;

/// A worker's id (given by the shell at the handshake; also the protocol's worker number).
pub type WorkerId = u32;

/// Tunables of the scheduler.
#[derive(Clone, Debug)]
pub struct SchedConfig {
    /// The window of a worker before its service time was measured.
    pub initial_window: u32,
    pub min_window: u32,
    pub max_window: u32,
    /// How much queued work (in time) a worker should hold to hide the round trip.
    pub latency_target: Duration,
}

impl Default for SchedConfig {
    fn default() -> Self {
        SchedConfig {
            initial_window: 1,
            min_window: 1,
            max_window: 256,
            latency_target: Duration::from_millis(5),
        }
    }
}

impl SchedConfig {
    /// A fixed window (no adaptation).
    pub fn fixed(window: u32) -> SchedConfig {
        let w = window.max(1);
        SchedConfig {
            initial_window: w,
            min_window: w,
            max_window: w,
            latency_target: Duration::from_millis(5),
        }
    }
}

/// The implementations of a task class, by module definition id (index into the job's
/// [`pnet_protocol::ModuleDef`]s).
#[derive(Clone, Debug, PartialEq)]
pub enum Impls {
    One(u32),
    Alternatives {
        preferences: Vec<String>,
        /// (target, module definition) in the order of the `modules` element.
        modules: Vec<(Option<String>, u32)>,
    },
}

/// What the tasks of one class (one transition of the net) need.
#[derive(Clone, Debug)]
pub struct ClassSpec {
    /// The transition's name.
    pub name: Arc<str>,
    /// `file:line:col` of the transition.
    pub location: String,
    /// Mandatory required capabilities (transition's and function's).
    pub mandatory: Vec<String>,
    pub impls: Impls,
    /// `None`: unlimited.
    pub max_retries: Option<u32>,
}

impl ClassSpec {
    /// The module definition a worker with these capabilities would run, if it fits.
    pub fn pick(&self, caps: &[String]) -> Option<u32> {
        let has = |c: &str| caps.iter().any(|k| k == c);
        if !self.mandatory.iter().all(|m| has(m)) {
            return None;
        }
        match &self.impls {
            Impls::One(d) => Some(*d),
            Impls::Alternatives {
                preferences,
                modules,
            } => {
                for p in preferences {
                    if has(p)
                        && let Some((_, d)) = modules.iter().find(|(t, _)| t.as_deref() == Some(p))
                    {
                        return Some(*d);
                    }
                }
                if preferences.is_empty()
                    && let Some((_, d)) =
                        modules.iter().find(|(t, _)| t.as_deref().is_some_and(has))
                {
                    return Some(*d);
                }
                modules.iter().find(|(t, _)| t.is_none()).map(|(_, d)| *d)
            }
        }
    }

    /// The requirements in words, for messages.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.mandatory.is_empty() {
            parts.push(format!("the capabilities {}", list(&self.mandatory)));
        }
        if let Impls::Alternatives {
            preferences,
            modules,
        } = &self.impls
            && !modules.iter().any(|(t, _)| t.is_none())
        {
            let targets: Vec<String> = if preferences.is_empty() {
                modules.iter().filter_map(|(t, _)| t.clone()).collect()
            } else {
                preferences.clone()
            };
            parts.push(format!("one of the targets {}", list(&targets)));
        }
        if parts.is_empty() {
            "nothing".into()
        } else {
            parts.join(" and ")
        }
    }
}

fn list(xs: &[String]) -> String {
    if xs.is_empty() {
        return "(none)".into();
    }
    xs.iter()
        .map(|x| format!("`{x}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A task waiting for a worker (or in flight: it is kept until its result arrives, so that it
/// can run again if the worker is lost).
#[derive(Clone, Debug, PartialEq)]
pub struct Pending {
    pub id: u64,
    pub class: u32,
    /// Input values in the order of the module definition's inputs.
    pub inputs: Vec<Value>,
    pub eureka: Option<Arc<str>>,
    /// The evaluated memory buffers and transfers of the call (planned at dispatch).
    pub memory: Option<Box<pnet_engine::TaskMemory>>,
    /// How often a worker was lost while running it.
    pub retries: u32,
    /// Arrival order (kept across retries, so that a retried task goes first).
    pub seq: u64,
}

/// A task sent to a worker.
#[derive(Clone, Debug)]
pub struct InFlight {
    pub task: Pending,
    /// The module definition chosen for the worker.
    pub def: u32,
    /// When it was sent.
    pub dispatched: Duration,
    /// A Cancel was sent (eureka or job end): whatever comes back, the task is discarded.
    pub cancelled: bool,
    order: u64,
    /// A steal of it was asked for, for this idle worker.
    steal_for: Option<WorkerId>,
    /// A steal of it failed (it had started): not asked again.
    started: bool,
}

/// Queued work on a worker (its estimated service time times the tasks it holds queued)
/// below which no task is stolen from it: moving the task would cost about as much as
/// waiting for it.
pub const STEAL_MIN_WORK: Duration = Duration::from_millis(2);

/// At most this many steals are asked for in one call of [`Sched::steal`] (it is called at
/// every dispatch: the other idle workers get theirs at the next one).
const MAX_STEALS: usize = 256;

/// A worker tasks may be stolen from: its id, estimated service time, and stealable tasks as
/// (order, task, class).
type Victim = (WorkerId, Option<f64>, Vec<(u64, u64, u32)>);

#[derive(Debug)]
struct Worker {
    name: Arc<str>,
    caps: Vec<String>,
    in_flight: HashMap<u64, InFlight>,
    window: u32,
    /// A leaf agent's capacity: its window, fixed (not adapted to the service time).
    fixed: Option<u32>,
    /// Estimated service time of one task, in seconds.
    est: Option<f64>,
    last_done: Duration,
    done: u64,
    /// A steal for it was asked for and not answered yet.
    awaiting_steal: bool,
    /// Tasks of other jobs it holds (a runtime with several jobs: see
    /// [`Sched::set_external`]).
    external: u32,
    /// The classes it fits: (class, number of capabilities, module definition).
    fits: Vec<(u32, usize, u32)>,
    /// Its load in the classes' `ready` sets (None: not there, its window is full).
    indexed: Option<usize>,
}

#[derive(Debug)]
struct Class {
    spec: ClassSpec,
    queue: VecDeque<Pending>,
    /// Fitting workers: (number of capabilities, worker, module definition), sorted.
    fitting: Vec<(usize, WorkerId, u32)>,
    /// The fitting workers with room in their window, by (number of capabilities, load,
    /// worker, module definition): the first is the one to place on (see [`best_worker`]).
    /// Kept up to date at every change of a worker's tasks, window or external load, so
    /// that placing a task costs O(log N), not a scan of all N workers.
    ready: BTreeSet<(usize, usize, WorkerId, u32)>,
}

/// What happened to a lost worker's tasks.
#[derive(Debug, Default, PartialEq)]
pub struct LostTasks {
    /// Put back at the front of their queues.
    pub requeued: Vec<u64>,
    /// Tasks that had been cancelled: drop them.
    pub discarded: Vec<u64>,
    /// The running task ran out of retries: (task, retries, limit).
    pub exhausted: Option<(u64, u32, u32)>,
    /// The task that was running on it (it counted a retry).
    pub running: Option<u64>,
}

/// A worker as the status shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkerView {
    pub id: WorkerId,
    pub name: Arc<str>,
    pub capabilities: Vec<String>,
    pub in_flight: u32,
    pub window: u32,
    pub done: u64,
}

/// The scheduler.
#[derive(Debug)]
pub struct Sched {
    cfg: SchedConfig,
    classes: Vec<Class>,
    workers: Vec<Option<Worker>>,
    n_workers: usize,
    queued: usize,
    running: usize,
    next_seq: u64,
    next_order: u64,
    /// Scratch: classes with queued tasks during a dispatch.
    cand: Vec<u32>,
    /// Workers with tasks of this job in flight, and those of them that also hold tasks of
    /// other jobs (the cheap test of [`Sched::steal`]).
    n_busy: usize,
    n_shared: usize,
}

impl Sched {
    pub fn new(cfg: SchedConfig) -> Sched {
        Sched {
            cfg,
            classes: Vec::new(),
            workers: Vec::new(),
            n_workers: 0,
            queued: 0,
            running: 0,
            next_seq: 0,
            next_order: 0,
            cand: Vec::new(),
            n_busy: 0,
            n_shared: 0,
        }
    }

    /// Brings a worker's entries in the classes' `ready` sets and the busy counts up to
    /// date after a change of its tasks, window or external load.
    fn reindex(&mut self, id: WorkerId) {
        let Some(Some(w)) = self.workers.get_mut(id as usize) else {
            return;
        };
        let room = w.in_flight.len() < w.window as usize;
        let load = room.then(|| w.in_flight.len() + w.external as usize);
        if load != w.indexed {
            for &(c, ncaps, def) in &w.fits {
                let ready = &mut self.classes[c as usize].ready;
                if let Some(old) = w.indexed {
                    ready.remove(&(ncaps, old, id, def));
                }
                if let Some(l) = load {
                    ready.insert((ncaps, l, id, def));
                }
            }
            w.indexed = load;
        }
    }

    /// Counts a worker out of the busy counts (before a change), see [`Sched::count_in`].
    fn count_out(&mut self, id: WorkerId) {
        if let Some(Some(w)) = self.workers.get(id as usize)
            && !w.in_flight.is_empty()
        {
            self.n_busy -= 1;
            self.n_shared -= usize::from(w.external > 0);
        }
    }

    /// Counts a worker into the busy counts (after a change).
    fn count_in(&mut self, id: WorkerId) {
        if let Some(Some(w)) = self.workers.get(id as usize)
            && !w.in_flight.is_empty()
        {
            self.n_busy += 1;
            self.n_shared += usize::from(w.external > 0);
        }
    }

    pub fn add_class(&mut self, spec: ClassSpec) -> u32 {
        let class = self.classes.len() as u32;
        let mut fitting = Vec::new();
        let mut ready = BTreeSet::new();
        for (id, w) in self.workers.iter_mut().enumerate() {
            if let Some(w) = w
                && let Some(d) = spec.pick(&w.caps)
            {
                let ncaps = w.caps.len();
                fitting.push((ncaps, id as WorkerId, d));
                w.fits.push((class, ncaps, d));
                if let Some(l) = w.indexed {
                    ready.insert((ncaps, l, id as WorkerId, d));
                }
            }
        }
        fitting.sort_unstable();
        self.classes.push(Class {
            spec,
            queue: VecDeque::new(),
            fitting,
            ready,
        });
        class
    }

    pub fn class(&self, c: u32) -> &ClassSpec {
        &self.classes[c as usize].spec
    }

    /// Adds a worker (ids are small and unique; a reused id replaces nothing: the shell never
    /// reuses them).
    pub fn add_worker(&mut self, id: WorkerId, name: &str, caps: Vec<String>) {
        let i = id as usize;
        if self.workers.len() <= i {
            self.workers.resize_with(i + 1, || None);
        }
        if self.workers[i].is_some() {
            return;
        }
        let mut fits = Vec::new();
        for (k, c) in self.classes.iter_mut().enumerate() {
            if let Some(d) = c.spec.pick(&caps) {
                let entry = (caps.len(), id, d);
                let at = c.fitting.binary_search(&entry).unwrap_or_else(|at| at);
                c.fitting.insert(at, entry);
                fits.push((k as u32, caps.len(), d));
            }
        }
        self.workers[i] = Some(Worker {
            name: name.into(),
            caps,
            in_flight: HashMap::new(),
            window: self.cfg.initial_window.clamp(1, self.cfg.max_window.max(1)),
            fixed: None,
            est: None,
            last_done: Duration::ZERO,
            done: 0,
            awaiting_steal: false,
            external: 0,
            fits,
            indexed: None,
        });
        self.n_workers += 1;
        self.reindex(id);
    }

    /// Removes a lost worker: its tasks go back to the front of their queues in their order;
    /// the one it was running (the oldest: workers run in order) counts a retry.
    pub fn remove_worker(&mut self, id: WorkerId) -> LostTasks {
        let mut lost = LostTasks::default();
        let running = self.running_record(id).map(|t| t.task.id);
        self.count_out(id);
        let Some(w) = self.workers.get_mut(id as usize).and_then(Option::take) else {
            return lost;
        };
        self.n_workers -= 1;
        for c in &mut self.classes {
            c.fitting.retain(|&(_, wid, _)| wid != id);
        }
        if let Some(l) = w.indexed {
            for &(c, ncaps, def) in &w.fits {
                self.classes[c as usize].ready.remove(&(ncaps, l, id, def));
            }
        }
        let mut tasks: Vec<InFlight> = w.in_flight.into_values().collect();
        self.running -= tasks.len();
        for t in &tasks {
            self.clear_steal(t.steal_for);
        }
        for w in self.workers.iter_mut().flatten() {
            for inf in w.in_flight.values_mut() {
                if inf.steal_for == Some(id) {
                    inf.steal_for = None;
                }
            }
        }
        tasks.sort_unstable_by_key(|t| t.order);
        let mut back = Vec::new();
        for t in tasks {
            if t.cancelled {
                lost.discarded.push(t.task.id);
                continue;
            }
            let mut p = t.task;
            if Some(p.id) == running {
                p.retries += 1;
                lost.running = Some(p.id);
                let limit = self.classes[p.class as usize].spec.max_retries;
                if let Some(limit) = limit
                    && p.retries > limit
                {
                    lost.exhausted = Some((p.id, p.retries, limit));
                    continue;
                }
            }
            lost.requeued.push(p.id);
            back.push(p);
        }
        for p in back.into_iter().rev() {
            self.queued += 1;
            self.classes[p.class as usize].queue.push_front(p);
        }
        lost
    }

    /// Tasks of other jobs a worker holds (set by the hub before each pump when a runtime
    /// runs several jobs): a worker busy with another job's task is no thief, and among
    /// fitting workers the one with the fewest tasks of all jobs is preferred. The window
    /// stays per job (fairness).
    pub fn set_external(&mut self, id: WorkerId, tasks: u32) {
        if let Some(Some(w)) = self.workers.get(id as usize)
            && w.external != tasks
        {
            self.count_out(id);
            if let Some(Some(w)) = self.workers.get_mut(id as usize) {
                w.external = tasks;
            }
            self.count_in(id);
            self.reindex(id);
        }
    }

    /// Makes a worker a leaf agent (a fat worker) of this capacity, or changes its capacity:
    /// its window is the capacity (0: nothing is placed on it), never adapted. The tasks it
    /// holds beyond a lowered capacity stay.
    pub fn set_capacity(&mut self, id: WorkerId, capacity: u32) {
        if let Some(Some(w)) = self.workers.get_mut(id as usize) {
            w.fixed = Some(capacity);
            w.window = capacity;
            self.reindex(id);
        }
    }

    /// A leaf agent lost the worker that ran `task` and runs it again: one more retry.
    /// Returns (retries, limit) when that is more than the class's limit allows (the caller
    /// fails the task), None otherwise (or for an unknown task).
    pub fn retried(&mut self, wid: WorkerId, task: u64) -> Option<(u32, u32)> {
        let w = self.workers.get_mut(wid as usize)?.as_mut()?;
        let inf = w.in_flight.get_mut(&task)?;
        if inf.cancelled {
            return None;
        }
        inf.task.retries += 1;
        let limit = self.classes[inf.task.class as usize].spec.max_retries?;
        (inf.task.retries > limit).then_some((inf.task.retries, limit))
    }

    /// Takes these tasks out of the queues if they are still queued (not placed): a leaf
    /// agent gives them back to its root (a steal) or drops them (a cancel). One pass over
    /// the queues.
    pub fn take_queued(&mut self, tasks: &[u64]) -> Vec<Pending> {
        let mut out = Vec::new();
        if tasks.is_empty() || self.queued == 0 {
            return out;
        }
        let want: std::collections::HashSet<u64> = tasks.iter().copied().collect();
        for c in &mut self.classes {
            if c.queue.is_empty() {
                continue;
            }
            c.queue.retain(|p| {
                if want.contains(&p.id) {
                    out.push(p.clone());
                    false
                } else {
                    true
                }
            });
        }
        self.queued -= out.len();
        out
    }

    /// Takes every queued (not placed) task out of the queues, in queue order per class: a
    /// leaf agent left without workers gives them back to its root.
    pub fn take_all_queued(&mut self) -> Vec<Pending> {
        let mut out = Vec::with_capacity(self.queued);
        for c in &mut self.classes {
            out.extend(c.queue.drain(..));
        }
        self.queued -= out.len();
        out
    }

    /// The tasks of this job a worker holds.
    pub fn load(&self, id: WorkerId) -> u32 {
        match self.workers.get(id as usize) {
            Some(Some(w)) => w.in_flight.len() as u32,
            _ => 0,
        }
    }

    /// A fresh sequence number for [`Pending::seq`].
    pub fn next_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq
    }

    /// Queues a task at the back of its class's queue.
    pub fn enqueue(&mut self, task: Pending) {
        self.queued += 1;
        self.classes[task.class as usize].queue.push_back(task);
    }

    /// Queues a task at the front (it was handed back).
    pub fn enqueue_front(&mut self, task: Pending) {
        self.queued += 1;
        self.classes[task.class as usize].queue.push_front(task);
    }

    /// Sends queued tasks to workers with room in their window; `send` sees each placement.
    /// Among classes, the oldest head task goes first.
    pub fn dispatch(&mut self, now: Duration, mut send: impl FnMut(WorkerId, &InFlight)) {
        if self.queued == 0 || self.n_workers == 0 {
            return;
        }
        let mut cand = std::mem::take(&mut self.cand);
        cand.clear();
        cand.extend(
            (0..self.classes.len() as u32).filter(|&c| !self.classes[c as usize].queue.is_empty()),
        );
        while !cand.is_empty() {
            // The class whose head is oldest.
            let (k, c) = if cand.len() == 1 {
                (0, cand[0])
            } else {
                let mut best = 0;
                let mut best_seq = u64::MAX;
                for (k, &c) in cand.iter().enumerate() {
                    let s = self.classes[c as usize]
                        .queue
                        .front()
                        .map_or(u64::MAX, |p| p.seq);
                    if s < best_seq {
                        best_seq = s;
                        best = k;
                    }
                }
                (best, cand[best])
            };
            let class = &self.classes[c as usize];
            let Some((wid, def)) = best_worker(&class.ready) else {
                cand.swap_remove(k);
                continue;
            };
            let class = &mut self.classes[c as usize];
            let Some(task) = class.queue.pop_front() else {
                cand.swap_remove(k);
                continue;
            };
            if class.queue.is_empty() {
                cand.swap_remove(k);
            }
            self.queued -= 1;
            self.running += 1;
            self.next_order += 1;
            let id = task.id;
            let inf = InFlight {
                task,
                def,
                dispatched: now,
                cancelled: false,
                order: self.next_order,
                steal_for: None,
                started: false,
            };
            self.count_out(wid);
            let Some(Some(w)) = self.workers.get_mut(wid as usize) else {
                continue;
            };
            send(wid, &inf);
            w.in_flight.insert(id, inf);
            self.count_in(wid);
            self.reindex(wid);
        }
        self.cand = cand;
    }

    /// A worker answered for a task: removes it from the worker's tasks (None: unknown task,
    /// for example one of a worker that was already declared lost).
    pub fn finish(&mut self, wid: WorkerId, task: u64, now: Duration) -> Option<InFlight> {
        let w = self.workers.get(wid as usize)?.as_ref()?;
        if !w.in_flight.contains_key(&task) {
            return None;
        }
        self.count_out(wid);
        let w = self.workers.get_mut(wid as usize)?.as_mut()?;
        let inf = w.in_flight.remove(&task)?;
        self.running -= 1;
        let thief = inf.steal_for;
        if !inf.cancelled {
            w.done += 1;
            let start = inf.dispatched.max(w.last_done);
            let service = now.saturating_sub(start).as_secs_f64();
            let est = match w.est {
                Some(e) => 0.9 * e + 0.1 * service,
                None => service,
            };
            w.est = Some(est);
            let target = self.cfg.latency_target.as_secs_f64();
            let want = if est <= 0.0 {
                f64::from(self.cfg.max_window)
            } else {
                (target / est).ceil()
            };
            w.window = match w.fixed {
                Some(capacity) => capacity,
                None => (want.min(f64::from(u32::MAX)) as u32)
                    .clamp(self.cfg.min_window.max(1), self.cfg.max_window.max(1)),
            };
        }
        w.last_done = now;
        self.count_in(wid);
        self.reindex(wid);
        self.clear_steal(thief);
        Some(inf)
    }

    fn clear_steal(&mut self, thief: Option<WorkerId>) {
        if let Some(t) = thief
            && let Some(Some(w)) = self.workers.get_mut(t as usize)
        {
            w.awaiting_steal = false;
        }
    }

    /// Work stealing: for every worker with nothing in flight (and no steal asked for it),
    /// a task held queued (not started) by a busy worker that the idle one can run: the
    /// newest queued task of the worker with the most queued work. Returns the steals to ask
    /// for, by victim (send them [`pnet_protocol::AgentMsg::Steal`]).
    pub fn steal(&mut self) -> Vec<(WorkerId, Vec<u64>)> {
        let mut asks: Vec<(WorkerId, Vec<u64>)> = Vec::new();
        // Cheap test first (counts kept up to date, no scan): one worker holds none of this
        // job's tasks, and some worker holds more than one (or holds tasks of other jobs,
        // which may run first).
        let (busy, shared) = (self.n_busy, self.n_shared > 0);
        if busy == self.n_workers || (self.running <= busy && !shared) {
            return asks;
        }
        let min_work = STEAL_MIN_WORK.as_secs_f64();
        // The victims, once: each worker's stealable tasks as (order, task, class), and its
        // estimated service time. A task given to a thief leaves its victim's list, so the
        // next thief sees what the scan of every worker saw before (one scan per call, not
        // one per thief).
        let mut victims: Vec<Victim> = Vec::new();
        for (vid, v) in self.workers.iter().enumerate() {
            let Some(v) = v else { continue };
            // The worker runs its oldest task of this job, unless it holds tasks of other
            // jobs (which may come first): then any may still be queued.
            let first = if v.external == 0 {
                if v.in_flight.len() < 2 {
                    continue;
                }
                v.in_flight.values().map(|t| t.order).min()
            } else {
                None
            };
            let tasks: Vec<(u64, u64, u32)> = v
                .in_flight
                .values()
                .filter(|t| {
                    Some(t.order) != first && !t.cancelled && !t.started && t.steal_for.is_none()
                })
                .map(|t| (t.order, t.task.id, t.task.class))
                .collect();
            if !tasks.is_empty() {
                victims.push((vid as WorkerId, v.est, tasks));
            }
        }
        let mut steals = 0;
        for thief in 0..self.workers.len() {
            if victims.is_empty() || steals >= MAX_STEALS {
                break;
            }
            let fits = match &self.workers[thief] {
                Some(w) if w.in_flight.is_empty() && w.external == 0 && !w.awaiting_steal => {
                    &w.fits
                }
                _ => continue,
            };
            let thief = thief as WorkerId;
            // (queued work, victim index, task index)
            let mut best: Option<(f64, usize, usize)> = None;
            for (k, (_, est, tasks)) in victims.iter().enumerate() {
                let mut n = 0usize;
                let mut newest: Option<(u64, usize)> = None;
                for (i, &(order, _, class)) in tasks.iter().enumerate() {
                    if !fits.iter().any(|&(c, ..)| c == class) {
                        continue;
                    }
                    n += 1;
                    if newest.is_none_or(|(o, _)| order > o) {
                        newest = Some((order, i));
                    }
                }
                let Some((_, i)) = newest else { continue };
                // Unknown service time: worth moving (that is when queues go wrong).
                let work = est.map_or(f64::INFINITY, |e| e * n as f64);
                if work < min_work {
                    continue;
                }
                if best.is_none_or(|(bw, ..)| work > bw) {
                    best = Some((work, k, i));
                }
            }
            let Some((_, k, i)) = best else {
                continue;
            };
            let victim = victims[k].0;
            let (_, task, _) = victims[k].2.swap_remove(i);
            if victims[k].2.is_empty() {
                // In worker order still: among equal work, the lowest worker goes first.
                victims.remove(k);
            }
            steals += 1;
            if let Some(Some(v)) = self.workers.get_mut(victim as usize)
                && let Some(inf) = v.in_flight.get_mut(&task)
            {
                inf.steal_for = Some(thief);
            }
            if let Some(Some(t)) = self.workers.get_mut(thief as usize) {
                t.awaiting_steal = true;
            }
            match asks.iter_mut().find(|(v, _)| *v == victim) {
                Some((_, v)) => v.push(task),
                None => asks.push((victim, vec![task])),
            }
        }
        asks
    }

    /// A worker answered a steal: `tasks` were dropped from its queue (they go back to their
    /// queues, in arrival order); the steals of `kept` failed (the tasks had started), so
    /// their thieves may ask again. Returns the tasks taken back that had been cancelled
    /// meanwhile (the caller discards them).
    pub fn returned(&mut self, wid: WorkerId, tasks: &[u64], kept: &[u64]) -> Vec<u64> {
        self.count_out(wid);
        let Some(Some(w)) = self.workers.get_mut(wid as usize) else {
            return Vec::new();
        };
        let mut back = Vec::new();
        for t in tasks {
            if let Some(inf) = w.in_flight.remove(t) {
                back.push(inf);
            }
        }
        let mut thieves: Vec<WorkerId> = back.iter().filter_map(|t| t.steal_for).collect();
        for t in kept {
            if let Some(inf) = w.in_flight.get_mut(t) {
                inf.started = true;
                if let Some(thief) = inf.steal_for.take() {
                    thieves.push(thief);
                }
            }
        }
        self.count_in(wid);
        self.reindex(wid);
        for t in thieves {
            self.clear_steal(Some(t));
        }
        self.running -= back.len();
        let mut discarded = Vec::new();
        for inf in back {
            if inf.cancelled {
                discarded.push(inf.task.id);
                continue;
            }
            self.queued += 1;
            let q = &mut self.classes[inf.task.class as usize].queue;
            // In arrival order among the queued tasks.
            let pos = q
                .iter()
                .position(|p| p.seq > inf.task.seq)
                .unwrap_or(q.len());
            q.insert(pos, inf.task);
        }
        discarded
    }

    /// Takes back a task that was placed on a worker but never sent (its dispatch failed):
    /// no service time is measured and nothing is counted as done.
    pub fn withdraw(&mut self, wid: WorkerId, task: u64) -> Option<InFlight> {
        self.workers
            .get(wid as usize)?
            .as_ref()?
            .in_flight
            .get(&task)?;
        self.count_out(wid);
        let w = self.workers.get_mut(wid as usize)?.as_mut()?;
        let inf = w.in_flight.remove(&task);
        self.count_in(wid);
        self.reindex(wid);
        let inf = inf?;
        self.running -= 1;
        Some(inf)
    }

    /// Removes the queued tasks of these eureka groups and marks the running ones cancelled;
    /// returns the removed tasks and the (worker, task) pairs to send a Cancel to.
    pub fn cancel_groups(&mut self, groups: &[String]) -> (Vec<u64>, Vec<(WorkerId, u64)>) {
        let hit = |p: &Pending| {
            p.eureka
                .as_deref()
                .is_some_and(|g| groups.iter().any(|x| x == g))
        };
        let mut removed = Vec::new();
        for c in &mut self.classes {
            c.queue.retain(|p| {
                if hit(p) {
                    removed.push(p.id);
                    false
                } else {
                    true
                }
            });
        }
        self.queued -= removed.len();
        let mut running = Vec::new();
        for (wid, w) in self.workers.iter_mut().enumerate() {
            let Some(w) = w else { continue };
            for inf in w.in_flight.values_mut() {
                if !inf.cancelled && hit(&inf.task) {
                    inf.cancelled = true;
                    running.push((wid as WorkerId, inf.task.id));
                }
            }
        }
        running.sort_unstable();
        (removed, running)
    }

    /// Marks one task in flight on a worker cancelled (a Cancel is sent to it; whatever comes
    /// back is discarded); false if the worker does not hold it.
    pub fn cancel_in_flight(&mut self, wid: WorkerId, task: u64) -> bool {
        match self
            .workers
            .get_mut(wid as usize)
            .and_then(Option::as_mut)
            .and_then(|w| w.in_flight.get_mut(&task))
        {
            Some(inf) => {
                inf.cancelled = true;
                true
            }
            None => false,
        }
    }

    /// Marks every task in flight cancelled (the job ends); returns them.
    pub fn cancel_all(&mut self) -> Vec<(WorkerId, u64)> {
        let mut out = Vec::new();
        for (wid, w) in self.workers.iter_mut().enumerate() {
            let Some(w) = w else { continue };
            for inf in w.in_flight.values_mut() {
                if !inf.cancelled {
                    inf.cancelled = true;
                    out.push((wid as WorkerId, inf.task.id));
                }
            }
        }
        out.sort_unstable();
        out
    }

    /// A class with queued tasks that no current worker can run.
    pub fn unplaceable(&self) -> Option<u32> {
        self.classes
            .iter()
            .position(|c| !c.queue.is_empty() && c.fitting.is_empty())
            .map(|c| c as u32)
    }

    /// A class with queued tasks whose fitting workers are all leaf agents of capacity 0
    /// (left without workers of their own): nothing is placed until one has workers again.
    /// Not [`Sched::unplaceable`], since a leaf's capacity may come back by itself.
    pub fn stalled(&self) -> Option<u32> {
        let empty_leaf = |id: WorkerId| matches!(self.workers.get(id as usize), Some(Some(w)) if w.fixed == Some(0));
        self.classes
            .iter()
            .position(|c| {
                !c.queue.is_empty()
                    && !c.fitting.is_empty()
                    && c.fitting.iter().all(|&(_, id, _)| empty_leaf(id))
            })
            .map(|c| c as u32)
    }

    /// Whether some current worker fits the class.
    pub fn placeable(&self, class: u32) -> bool {
        !self.classes[class as usize].fitting.is_empty()
    }

    pub fn queued(&self) -> usize {
        self.queued
    }

    pub fn running(&self) -> usize {
        self.running
    }

    pub fn worker_count(&self) -> usize {
        self.n_workers
    }

    /// Sum of the windows of all workers.
    pub fn capacity(&self) -> usize {
        self.workers
            .iter()
            .flatten()
            .map(|w| w.window as usize)
            .sum()
    }

    pub fn worker_caps(&self, id: WorkerId) -> Option<&[String]> {
        self.workers
            .get(id as usize)
            .and_then(|w| w.as_ref())
            .map(|w| w.caps.as_slice())
    }

    /// Whether this worker is a leaf agent (its window fixed by [`Sched::set_capacity`]).
    pub fn is_leaf(&self, id: WorkerId) -> bool {
        matches!(self.workers.get(id as usize), Some(Some(w)) if w.fixed.is_some())
    }

    pub fn worker_name(&self, id: WorkerId) -> Option<&Arc<str>> {
        self.workers
            .get(id as usize)
            .and_then(|w| w.as_ref())
            .map(|w| &w.name)
    }

    pub fn workers(&self) -> Vec<WorkerView> {
        self.workers
            .iter()
            .enumerate()
            .filter_map(|(id, w)| {
                w.as_ref().map(|w| WorkerView {
                    id: id as WorkerId,
                    name: w.name.clone(),
                    capabilities: w.caps.clone(),
                    in_flight: w.in_flight.len() as u32,
                    window: w.window,
                    done: w.done,
                })
            })
            .collect()
    }

    /// The records of the tasks in flight on a worker, oldest first.
    pub fn in_flight_records(&self, id: WorkerId) -> Vec<&InFlight> {
        let Some(Some(w)) = self.workers.get(id as usize) else {
            return Vec::new();
        };
        let mut v: Vec<&InFlight> = w.in_flight.values().collect();
        v.sort_unstable_by_key(|t| t.order);
        v
    }

    /// The task a worker is running: workers run their tasks in order, so the oldest one in
    /// flight that is not cancelled. The one rule for "what was it running" (a lost worker's
    /// retry count, the crash message).
    pub fn running_record(&self, id: WorkerId) -> Option<&InFlight> {
        let Some(Some(w)) = self.workers.get(id as usize) else {
            return None;
        };
        w.in_flight
            .values()
            .filter(|t| !t.cancelled)
            .min_by_key(|t| t.order)
    }

    /// The class of a task in flight on a worker.
    pub fn in_flight_class(&self, id: WorkerId, task: u64) -> Option<u32> {
        let Some(Some(w)) = self.workers.get(id as usize) else {
            return None;
        };
        w.in_flight.get(&task).map(|t| t.task.class)
    }

    /// The tasks in flight on a worker, oldest first (for tests and status).
    pub fn in_flight(&self, id: WorkerId) -> Vec<u64> {
        let Some(Some(w)) = self.workers.get(id as usize) else {
            return Vec::new();
        };
        let mut v: Vec<&InFlight> = w.in_flight.values().collect();
        v.sort_unstable_by_key(|t| t.order);
        v.into_iter().map(|t| t.task.id).collect()
    }
}

/// The fitting worker with room that has the fewest capabilities, then the fewest tasks in
/// flight (of every job), then the lowest id: the first of a class's `ready` set.
fn best_worker(ready: &BTreeSet<(usize, usize, WorkerId, u32)>) -> Option<(WorkerId, u32)> {
    ready.first().map(|&(_, _, w, d)| (w, d))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, mandatory: &[&str], impls: Impls, max_retries: Option<u32>) -> ClassSpec {
        ClassSpec {
            name: name.into(),
            location: "t.xpnet:1:1".into(),
            mandatory: mandatory.iter().map(|s| s.to_string()).collect(),
            impls,
            max_retries,
        }
    }

    fn caps(xs: &[&str]) -> Vec<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    fn task(s: &mut Sched, id: u64, class: u32) -> Pending {
        Pending {
            id,
            class,
            inputs: vec![Value::Long(id as i64)],
            eureka: None,
            memory: None,
            retries: 0,
            seq: s.next_seq(),
        }
    }

    fn dispatch(s: &mut Sched) -> Vec<(WorkerId, u64, u32)> {
        let mut v = Vec::new();
        s.dispatch(Duration::ZERO, |w, t| v.push((w, t.task.id, t.def)));
        v
    }

    #[test]
    fn pick_honours_requirements_and_preferences() {
        let s = spec(
            "t",
            &["A"],
            Impls::Alternatives {
                preferences: caps(&["gpu", "cpu"]),
                modules: vec![(Some("cpu".into()), 1), (Some("gpu".into()), 2)],
            },
            None,
        );
        assert_eq!(s.pick(&caps(&["A", "cpu", "gpu"])), Some(2));
        assert_eq!(s.pick(&caps(&["A", "cpu"])), Some(1));
        assert_eq!(s.pick(&caps(&["cpu"])), None, "mandatory A is missing");
        assert_eq!(s.pick(&caps(&["A"])), None, "no target");
        assert_eq!(
            s.describe(),
            "the capabilities `A` and one of the targets `gpu`, `cpu`"
        );
        let fallback = spec(
            "t",
            &[],
            Impls::Alternatives {
                preferences: vec![],
                modules: vec![(Some("x".into()), 1), (None, 3)],
            },
            None,
        );
        assert_eq!(fallback.pick(&caps(&["x"])), Some(1));
        assert_eq!(fallback.pick(&caps(&["y"])), Some(3));
    }

    #[test]
    fn a_leaf_has_its_capacity_as_window_and_reports_retries() {
        let mut s = Sched::new(SchedConfig::default());
        let c = s.add_class(spec("t", &[], Impls::One(0), Some(1)));
        s.add_worker(0, "leaf", caps(&[]));
        s.set_capacity(0, 0);
        for i in 0..10 {
            let t = task(&mut s, i, c);
            s.enqueue(t);
        }
        assert!(dispatch(&mut s).is_empty(), "capacity 0: nothing placed");
        assert_eq!((s.unplaceable(), s.stalled()), (None, Some(c)));
        s.set_capacity(0, 6);
        assert_eq!(s.stalled(), None);
        assert_eq!(dispatch(&mut s).len(), 6);
        // Fast answers do not change a leaf's window.
        s.finish(0, 0, Duration::from_micros(10));
        assert_eq!(s.workers()[0].window, 6);
        assert_eq!(dispatch(&mut s).len(), 1);
        // Retries count on the task in flight; the second passes the limit of 1.
        assert_eq!(s.retried(0, 1), None);
        assert_eq!(s.retried(0, 1), Some((2, 1)));
        assert_eq!(s.retried(0, 99), None, "unknown task");
        // Still queued: 7, 8, 9; take two of them (and one that is not queued).
        let taken: Vec<u64> = s.take_queued(&[9, 7, 1]).iter().map(|p| p.id).collect();
        assert_eq!(taken, vec![7, 9]);
        assert_eq!(s.queued(), 1);
        assert!(s.cancel_in_flight(0, 2));
        assert!(!s.cancel_in_flight(0, 8), "queued, not in flight");
        let lost = s.remove_worker(0);
        assert_eq!(lost.discarded, vec![2]);
        // A leaf left without workers gives back all it has queued: the lost worker's tasks
        // (at the front, in their order), then 8.
        let mut want = lost.requeued.clone();
        want.push(8);
        let back: Vec<u64> = s.take_all_queued().iter().map(|p| p.id).collect();
        assert_eq!(back, want);
        assert_eq!(s.queued(), 0);
        assert!(s.take_all_queued().is_empty());
    }

    #[test]
    fn least_specialised_then_least_loaded() {
        let mut s = Sched::new(SchedConfig::fixed(2));
        let c = s.add_class(spec("t", &[], Impls::One(0), None));
        s.add_worker(0, "gpu", caps(&["a", "b", "c"]));
        s.add_worker(1, "plain1", caps(&["a"]));
        s.add_worker(2, "plain2", caps(&["b"]));
        for i in 0..5 {
            let t = task(&mut s, i, c);
            s.enqueue(t);
        }
        let got = dispatch(&mut s);
        // plain1 and plain2 alternate (least loaded), then the specialised one gets the rest.
        assert_eq!(
            got.iter().map(|g| (g.0, g.1)).collect::<Vec<_>>(),
            vec![(1, 0), (2, 1), (1, 2), (2, 3), (0, 4)]
        );
        assert_eq!(s.queued(), 0);
        assert_eq!(s.running(), 5);
    }

    #[test]
    fn oldest_head_first_across_classes() {
        let mut s = Sched::new(SchedConfig::fixed(1));
        let a = s.add_class(spec("a", &[], Impls::One(0), None));
        let b = s.add_class(spec("b", &[], Impls::One(1), None));
        let t0 = task(&mut s, 0, b);
        let t1 = task(&mut s, 1, a);
        s.enqueue(t0);
        s.enqueue(t1);
        s.add_worker(0, "w", caps(&[]));
        assert_eq!(dispatch(&mut s), vec![(0, 0, 1)]);
        assert!(s.finish(0, 0, Duration::from_millis(1)).is_some());
        assert_eq!(dispatch(&mut s), vec![(0, 1, 0)]);
    }

    #[test]
    fn lost_worker_requeues_in_order_and_counts_one_retry() {
        let mut s = Sched::new(SchedConfig::fixed(3));
        let c = s.add_class(spec("t", &[], Impls::One(0), Some(1)));
        s.add_worker(0, "w0", caps(&[]));
        for i in 0..4 {
            let t = task(&mut s, i, c);
            s.enqueue(t);
        }
        assert_eq!(dispatch(&mut s).len(), 3);
        assert_eq!(s.in_flight(0), vec![0, 1, 2]);
        let lost = s.remove_worker(0);
        assert_eq!(lost.requeued, vec![0, 1, 2]);
        assert_eq!(lost.running, Some(0));
        assert_eq!(lost.exhausted, None);
        assert_eq!((s.queued(), s.running()), (4, 0));
        assert_eq!(s.unplaceable(), Some(c));
        s.add_worker(1, "w1", caps(&[]));
        let got = dispatch(&mut s);
        assert_eq!(
            got.iter().map(|g| g.1).collect::<Vec<_>>(),
            vec![0, 1, 2],
            "requeued tasks go first, in order"
        );
        // Task 0 was lost once already; the limit is 1, so a second loss exhausts it.
        let lost = s.remove_worker(1);
        assert_eq!(lost.exhausted, Some((0, 2, 1)));
        assert_eq!(lost.requeued, vec![1, 2]);
        assert_eq!(s.queued(), 3);
    }

    #[test]
    fn eureka_removes_queued_and_marks_running() {
        let mut s = Sched::new(SchedConfig::fixed(1));
        let c = s.add_class(spec("t", &[], Impls::One(0), None));
        s.add_worker(0, "w", caps(&[]));
        for i in 0..3 {
            let mut t = task(&mut s, i, c);
            t.eureka = Some(if i == 2 { "other" } else { "g" }.into());
            s.enqueue(t);
        }
        dispatch(&mut s);
        let (removed, running) = s.cancel_groups(&["g".to_string()]);
        assert_eq!(removed, vec![1]);
        assert_eq!(running, vec![(0, 0)]);
        assert_eq!(s.queued(), 1);
        let inf = s.finish(0, 0, Duration::ZERO).expect("in flight");
        assert!(inf.cancelled);
        // A cancelled task of a lost worker is discarded, not retried.
        dispatch(&mut s);
        assert_eq!(s.cancel_all(), vec![(0, 2)]);
        let lost = s.remove_worker(0);
        assert_eq!(lost.discarded, vec![2]);
        assert!(lost.requeued.is_empty());
    }

    #[test]
    fn window_adapts_to_service_time() {
        let mut s = Sched::new(SchedConfig::default());
        let c = s.add_class(spec("t", &[], Impls::One(0), None));
        s.add_worker(0, "w", caps(&[]));
        let window = |s: &Sched| s.workers()[0].window;
        assert_eq!(window(&s), 1, "one task until the service time is known");
        // Fast tasks: 10 µs each -> the window grows to the maximum.
        let mut now = Duration::ZERO;
        for i in 0..50 {
            let t = task(&mut s, i, c);
            s.enqueue(t);
            s.dispatch(now, |_, _| {});
            now += Duration::from_micros(10);
            assert!(s.finish(0, i, now).is_some());
        }
        assert_eq!(window(&s), 256);
        // Slow tasks: one second each -> one at a time.
        for i in 50..100 {
            let t = task(&mut s, i, c);
            s.enqueue(t);
            s.dispatch(now, |_, _| {});
            now += Duration::from_secs(1);
            assert!(s.finish(0, i, now).is_some());
        }
        assert_eq!(window(&s), 1);
    }

    #[test]
    fn first_window_is_one_task_so_late_workers_get_work() {
        let mut s = Sched::new(SchedConfig::default());
        let c = s.add_class(spec("t", &[], Impls::One(0), None));
        s.add_worker(0, "early", caps(&[]));
        for i in 0..4 {
            let t = task(&mut s, i, c);
            s.enqueue(t);
        }
        assert_eq!(
            dispatch(&mut s),
            vec![(0, 0, 0)],
            "one task until its time is known"
        );
        for w in 1..4 {
            s.add_worker(w, &format!("late{w}"), caps(&[]));
        }
        let got = dispatch(&mut s);
        assert_eq!(
            got.iter().map(|g| (g.0, g.1)).collect::<Vec<_>>(),
            vec![(1, 1), (2, 2), (3, 3)]
        );
    }

    /// Worker 0 (`busy`, window 3) holds tasks 0, 1, 2 of one class: 0 runs, 1 and 2 wait.
    fn busy_worker_with_three_tasks() -> Sched {
        let mut s = Sched::new(SchedConfig::fixed(3));
        let c = s.add_class(spec("t", &[], Impls::One(0), None));
        s.add_worker(0, "busy", caps(&[]));
        for i in 0..3 {
            let t = task(&mut s, i, c);
            s.enqueue(t);
        }
        assert_eq!(dispatch(&mut s).len(), 3);
        s
    }

    #[test]
    fn idle_worker_steals_a_queued_task_and_gets_it() {
        let mut s = busy_worker_with_three_tasks();
        // Nobody idle: nothing to steal.
        assert!(s.steal().is_empty());
        s.add_worker(1, "late", caps(&[]));
        // The newest queued task (2) of worker 0; task 0 runs there.
        assert_eq!(s.steal(), vec![(0, vec![2])]);
        assert!(s.steal().is_empty(), "one steal at a time per idle worker");
        assert!(s.returned(0, &[2], &[]).is_empty());
        assert_eq!((s.queued(), s.running()), (1, 2));
        assert_eq!(dispatch(&mut s), vec![(1, 2, 0)]);
        assert_eq!(s.in_flight(0), vec![0, 1]);
        // A steal that comes too late (the task started): the thief may ask again.
        assert!(s.finish(1, 2, Duration::from_millis(1)).is_some());
        assert_eq!(s.steal(), vec![(0, vec![1])]);
        assert!(s.returned(0, &[], &[1]).is_empty());
        assert_eq!(s.in_flight(0), vec![0, 1]);
        assert!(
            s.steal().is_empty(),
            "a task that started is not asked for again"
        );
    }

    #[test]
    fn steals_only_tasks_the_thief_can_run_and_not_short_queues() {
        let mut s = Sched::new(SchedConfig::fixed(4));
        let gpu = s.add_class(spec("g", &["GPU"], Impls::One(0), None));
        let any = s.add_class(spec("a", &[], Impls::One(1), None));
        s.add_worker(0, "gpu", caps(&["GPU"]));
        for i in 0..3 {
            let t = task(&mut s, i, gpu);
            s.enqueue(t);
        }
        dispatch(&mut s);
        s.add_worker(1, "cpu", caps(&[]));
        assert!(s.steal().is_empty(), "worker 1 cannot run GPU tasks");
        // Worker 1 measured as fast; a queue of short tasks on worker 1 is not stolen.
        let t = task(&mut s, 10, any);
        s.enqueue(t);
        assert_eq!(dispatch(&mut s), vec![(1, 10, 1)]);
        assert!(s.finish(1, 10, Duration::from_micros(10)).is_some());
        for i in 11..14 {
            let t = task(&mut s, i, any);
            s.enqueue(t);
        }
        s.dispatch(Duration::from_micros(10), |_, _| {});
        assert_eq!(s.in_flight(1), vec![11, 12, 13]);
        s.add_worker(2, "cpu2", caps(&[]));
        assert!(
            s.steal().is_empty(),
            "30 us of queued work is not worth a steal"
        );
    }

    #[test]
    fn a_worker_busy_with_another_job_is_no_thief() {
        let mut s = busy_worker_with_three_tasks();
        s.add_worker(1, "other-job", caps(&[]));
        s.set_external(1, 1);
        assert!(s.steal().is_empty());
        s.set_external(1, 0);
        assert_eq!(s.steal(), vec![(0, vec![2])]);
        // Behind another job's task, even the oldest task of this job may be waiting.
        assert!(s.returned(0, &[2], &[]).is_empty());
        assert_eq!(dispatch(&mut s), vec![(1, 2, 0)]);
        s.add_worker(2, "idle", caps(&[]));
        assert_eq!(s.steal(), vec![(0, vec![1])]);
        assert!(s.returned(0, &[], &[1]).is_empty());
        s.set_external(0, 1);
        assert_eq!(s.steal(), vec![(0, vec![0])]);
        assert!(s.returned(0, &[], &[0]).is_empty());
        assert!(s.steal().is_empty(), "both started");
    }

    #[test]
    fn returned_cancelled_task_is_discarded_and_lost_thief_forgotten() {
        let mut s = busy_worker_with_three_tasks();
        s.add_worker(1, "idle", caps(&[]));
        s.add_worker(2, "idle2", caps(&[]));
        assert_eq!(s.steal(), vec![(0, vec![2, 1])]);
        s.cancel_all();
        assert_eq!(s.returned(0, &[2], &[1]), vec![2]);
        assert_eq!(s.queued(), 0);
        // The thief of task 1 is lost: its steal is forgotten.
        let lost = s.remove_worker(2);
        assert_eq!(lost, LostTasks::default());
    }

    #[test]
    fn unknown_answers_are_ignored() {
        let mut s = Sched::new(SchedConfig::default());
        assert!(s.finish(7, 1, Duration::ZERO).is_none());
        assert_eq!(s.remove_worker(3), LostTasks::default());
    }
}
