//! Running tasks: the task queue shared with the connection loop, the executor thread, module
//! lookup, native calls and command modules.

use std::collections::{HashMap, VecDeque};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use pnet_memory::{LocalBuffers, MemoryTask, Peers, Segment};
use pnet_module_sdk::host::LogTail;
use pnet_module_sdk::{CallFn, ENTRY_SYMBOL, EntryFn, host};
use pnet_protocol::{ModuleDef, Secret, TASK_LOG_LIMIT, TaskRun, TaskTimes, WorkerMsg};
use pnet_stdlib::json::{from_json, from_json_at, to_json};
use serde_json::Value as Json;

/// The largest output (stdout of a command, or what a native call writes) accepted.
pub const MAX_OUTPUT: usize = pnet_protocol::MAX_FRAME;

/// How many bytes of a failing command's standard error are kept for the message.
const STDERR_TAIL: usize = 16 << 10;
/// How many lines of it the message shows.
const STDERR_LINES: usize = 10;

/// The state shared by the connection loop and the executor thread.
#[derive(Default)]
pub struct Shared {
    state: Mutex<State>,
    wake: Condvar,
    /// Set when the running task is cancelled (reset when a task starts).
    cancelled: AtomicBool,
}

#[derive(Default)]
struct State {
    /// Tasks and when their batch arrived.
    queue: VecDeque<(TaskRun, Instant)>,
    running: Option<Running>,
    stop: bool,
}

struct Running {
    task: u64,
    /// The process group of a running command module.
    child: Option<i32>,
    /// A command module is being started (its group is not known yet).
    starting: bool,
}

/// What happened to a cancel request.
#[derive(Debug, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The task was queued and is dropped: answer `Cancelled` now.
    Dropped,
    /// The task is running: it was told (and a command module killed); the executor answers.
    Signalled,
    /// The task is unknown (finished already, or never received).
    Unknown,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the state inconsistent (every update is
        // a single assignment or queue operation), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues tasks for the executor.
    pub fn push(&self, tasks: Vec<TaskRun>) {
        if tasks.is_empty() {
            return;
        }
        let now = Instant::now();
        let mut st = self.lock();
        st.queue.extend(tasks.into_iter().map(|t| (t, now)));
        drop(st);
        self.wake.notify_one();
    }

    /// Cancels a queued or running task.
    pub fn cancel(&self, task: u64) -> CancelOutcome {
        let mut st = self.lock();
        if let Some(pos) = st.queue.iter().position(|(t, _)| t.task == task) {
            st.queue.remove(pos);
            return CancelOutcome::Dropped;
        }
        match &st.running {
            Some(r) if r.task == task => {
                self.cancelled.store(true, Ordering::SeqCst);
                if let Some(pgid) = r.child {
                    kill_group(pgid);
                }
                CancelOutcome::Signalled
            }
            _ => CancelOutcome::Unknown,
        }
    }

    /// Drops those of these tasks that are still queued (work stealing); returns them.
    pub fn steal(&self, tasks: &[u64]) -> Vec<u64> {
        let mut st = self.lock();
        let mut taken = Vec::new();
        st.queue.retain(|(t, _)| {
            if tasks.contains(&t.task) {
                taken.push(t.task);
                false
            } else {
                true
            }
        });
        taken
    }

    /// The running task, for heartbeats.
    pub fn running(&self) -> Option<u64> {
        self.lock().running.as_ref().map(|r| r.task)
    }

    /// Stops the executor: drops the queue, cancels the running task and kills a running
    /// command module, then waits (up to `grace`) until that command has been reaped.
    pub fn stop(&self, grace: std::time::Duration) {
        let mut st = self.lock();
        st.stop = true;
        st.queue.clear();
        let mut killed = false;
        if let Some(r) = &st.running {
            self.cancelled.store(true, Ordering::SeqCst);
            if let Some(pgid) = r.child {
                kill_group(pgid);
                killed = true;
            } else if r.starting {
                // `set_child` kills it as soon as its group is known (the task is cancelled).
                killed = true;
            }
        }
        self.wake.notify_all();
        if killed {
            let deadline = std::time::Instant::now() + grace;
            while st.running.is_some() {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    break;
                }
                st = self
                    .wake
                    .wait_timeout(st, left)
                    .map_or_else(|e| e.into_inner().0, |(g, _)| g);
            }
        }
    }

    /// The next task and when it arrived, waiting for one; `None` once stopped.
    fn next(&self) -> Option<(TaskRun, Instant)> {
        let mut st = self.lock();
        loop {
            if st.stop {
                return None;
            }
            if let Some(t) = st.queue.pop_front() {
                self.cancelled.store(false, Ordering::SeqCst);
                st.running = Some(Running {
                    task: t.0.task,
                    child: None,
                    starting: false,
                });
                return Some(t);
            }
            st = self.wake.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The running task finished; whether it was cancelled.
    fn finish(&self) -> bool {
        let mut st = self.lock();
        st.running = None;
        if st.stop {
            // `stop` may be waiting for this.
            self.wake.notify_all();
        }
        self.cancelled.load(Ordering::SeqCst)
    }

    /// Says that the running task starts a command module, so that [`Shared::stop`] waits
    /// for it also before its process group is known; false (start nothing) if the task is
    /// cancelled already. (Under the lock that `stop` and `cancel` take to cancel: either
    /// they see `starting`, or this sees the cancel.)
    fn starting_command(&self) -> bool {
        let mut st = self.lock();
        if self.cancelled.load(Ordering::SeqCst) {
            return false;
        }
        if let Some(r) = st.running.as_mut() {
            r.starting = true;
        }
        true
    }

    /// Records the process group of the running command; kills it at once if the task was
    /// cancelled meanwhile.
    fn set_child(&self, pgid: Option<i32>) {
        let mut st = self.lock();
        if let Some(r) = st.running.as_mut() {
            r.child = pgid;
            r.starting = false;
        }
        if let Some(pgid) = pgid
            && self.cancelled.load(Ordering::SeqCst)
        {
            kill_group(pgid);
        }
    }
}

fn kill_group(pgid: i32) {
    if pgid > 0 {
        // SAFETY: plain system call; the group exists until its leader is reaped, which the
        // executor does only after clearing it from the state (under the same lock).
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

/// A resolved module implementation.
#[derive(Clone)]
enum Resolved {
    Native {
        call: CallFn,
        /// Keeps the library loaded.
        _lib: Arc<Loaded>,
        /// The library's path and the function's name in it (for the isolated host).
        path: PathBuf,
        function: String,
    },
    Command {
        program: PathBuf,
        /// The function name, for `<module>` executables.
        arg: Option<String>,
    },
}

struct Loaded {
    _lib: libloading::Library,
    module: host::Module,
}

/// The module implementations a worker knows, by id (shared between the connection loop and
/// the executor thread), and the module path of the job of some of them (searched first).
#[derive(Clone, Debug, Default)]
pub struct ModuleTable(Arc<std::sync::RwLock<Defs>>);

#[derive(Debug, Default)]
struct Defs {
    defs: HashMap<u32, ModuleDef>,
    paths: HashMap<u32, Arc<[PathBuf]>>,
}

impl ModuleTable {
    pub fn new(defs: Vec<ModuleDef>) -> ModuleTable {
        let table = ModuleTable::default();
        table.add(defs);
        table
    }

    pub fn get(&self, id: u32) -> Option<ModuleDef> {
        let map = self.0.read().unwrap_or_else(|e| e.into_inner());
        map.defs.get(&id).cloned()
    }

    /// The job's own module path of implementation `id` (empty: none).
    pub fn path(&self, id: u32) -> Option<Arc<[PathBuf]>> {
        let map = self.0.read().unwrap_or_else(|e| e.into_inner());
        map.paths.get(&id).cloned()
    }

    pub fn add(&self, defs: Vec<ModuleDef>) {
        let mut map = self.0.write().unwrap_or_else(|e| e.into_inner());
        for d in defs {
            map.paths.remove(&d.id);
            map.defs.insert(d.id, d);
        }
    }

    /// Implementations of a job whose module path `dirs` is searched before the worker's
    /// (see [`pnet_protocol::AgentMsg::ModulesAt`]).
    pub fn add_at(&self, defs: Vec<ModuleDef>, dirs: Vec<String>) {
        let dirs: Arc<[PathBuf]> = dirs.into_iter().map(PathBuf::from).collect();
        let mut map = self.0.write().unwrap_or_else(|e| e.into_inner());
        for d in defs {
            map.paths.insert(d.id, dirs.clone());
            map.defs.insert(d.id, d);
        }
    }

    pub fn forget(&self, ids: &[u32]) {
        let mut map = self.0.write().unwrap_or_else(|e| e.into_inner());
        for id in ids {
            map.defs.remove(id);
            map.paths.remove(id);
        }
    }

    pub fn len(&self) -> usize {
        self.0.read().unwrap_or_else(|e| e.into_inner()).defs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A worker's working memory, as the executor uses it for calls with memory buffers.
pub struct ExecMemory {
    /// The worker's id (its segment's id).
    pub id: u32,
    /// Its segment (also served by the worker's memory server).
    pub segment: Arc<Segment>,
    /// The host identity (same-host segments are mapped, others reached over TCP).
    pub host: String,
    pub secret: Secret,
    /// Access to the segments, made on first use and kept for the worker's life.
    peers: Option<Peers>,
}

impl ExecMemory {
    pub fn new(id: u32, segment: Arc<Segment>, host: String, secret: Secret) -> ExecMemory {
        ExecMemory {
            id,
            segment,
            host,
            secret,
            peers: None,
        }
    }

    /// The call limit: the segment's size (a call's buffers may use as much in total).
    pub fn limit(&self) -> u64 {
        self.segment.size()
    }

    fn peers(&mut self) -> &mut Peers {
        self.peers.get_or_insert_with(|| {
            Peers::new(
                self.host.clone(),
                Some((self.id, self.segment.clone())),
                self.secret.clone(),
            )
        })
    }
}

/// Runs tasks: module lookup and calls. Lives on the executor thread.
pub struct Executor {
    worker: String,
    /// The host identity, for the calls' context.
    host: String,
    defs: ModuleTable,
    dirs: Vec<PathBuf>,
    resolved: HashMap<u32, Resolved>,
    libs: HashMap<PathBuf, Arc<Loaded>>,
    input: Vec<u8>,
    output: Vec<u8>,
    memory: Option<ExecMemory>,
    /// This program, re-executed as a command's supervisor and as the module host (see
    /// [`crate::helper`]).
    helper: Option<PathBuf>,
    /// Native calls go to the module host.
    isolate: bool,
    /// The module host, started at the first isolated call and after a crash.
    module_host: Option<ModuleHost>,
    /// The running task's log: a native module's log lines, a command module's stderr and
    /// the standard output beyond its answer.
    log: std::cell::RefCell<LogTail>,
}

/// A running module host (see [`crate::helper`]): its own process group.
struct ModuleHost {
    child: std::process::Child,
    pid: i32,
    to: std::process::ChildStdin,
    from: std::io::BufReader<std::process::ChildStdout>,
}

/// Marks an error message that is complete but for the location (not prefixed with the
/// module's name again).
const WHOLE: char = '\u{1}';

impl Executor {
    pub fn new(worker: String, defs: Vec<ModuleDef>, dirs: Vec<PathBuf>) -> Executor {
        Executor {
            worker,
            host: crate::hostname(),
            defs: ModuleTable::new(defs),
            dirs,
            resolved: HashMap::new(),
            libs: HashMap::new(),
            input: Vec::with_capacity(256),
            output: Vec::with_capacity(256),
            memory: None,
            helper: None,
            isolate: false,
            module_host: None,
            log: std::cell::RefCell::new(LogTail::new(TASK_LOG_LIMIT)),
        }
    }

    /// Sets the host identity the calls see (default: the hostname).
    pub fn set_host(&mut self, host: String) {
        self.host = host;
    }

    /// Sets the program re-executed as a command's supervisor and as the module host
    /// (`gspc-worker`), and whether native calls run isolated in the module host.
    pub fn set_helper(&mut self, helper: Option<PathBuf>, isolate: bool) {
        self.helper = helper;
        self.isolate = isolate;
    }

    /// Gives the executor the worker's working memory (calls with memory buffers need it).
    pub fn set_memory(&mut self, memory: ExecMemory) {
        self.memory = Some(memory);
    }

    /// The module table, shared with the connection loop (which adds the implementations
    /// of [`pnet_protocol::AgentMsg::Modules`] before any task that names them is queued).
    pub fn module_table(&self) -> ModuleTable {
        self.defs.clone()
    }

    /// Runs tasks from `shared` until it is stopped, handing each answer to `answer`.
    pub fn run_loop(mut self, shared: &Shared, mut answer: impl FnMut(WorkerMsg) -> bool) {
        if self.memory.is_some() {
            // The fault handler of guard pages runs on this thread's alternate stack; without
            // one it still runs, on the thread's own stack.
            if let Err(e) = crate::fault::ensure_altstack() {
                eprintln!("gspc-worker {}: warning: {e}", self.worker);
            }
        }
        while let Some((task, arrived)) = shared.next() {
            let start = Instant::now();
            let result = self.run(shared, &task);
            let times = TaskTimes {
                queued_us: start.saturating_duration_since(arrived).as_micros() as u64,
                run_us: start.elapsed().as_micros() as u64,
            };
            let cancelled = shared.finish();
            if !self.log.borrow().is_empty() {
                let (text, dropped) = self.log.borrow_mut().take();
                let log = WorkerMsg::Log {
                    task: task.task,
                    text,
                    dropped,
                };
                if !answer(log) {
                    return;
                }
            }
            let msg = match result {
                _ if cancelled => WorkerMsg::Cancelled { task: task.task },
                Ok(outputs) => WorkerMsg::DoneAt {
                    task: task.task,
                    outputs,
                    times,
                },
                Err(message) => WorkerMsg::FailedAt {
                    task: task.task,
                    message,
                    times,
                },
            };
            if !answer(msg) {
                return;
            }
        }
    }

    /// Runs one task.
    fn run(&mut self, shared: &Shared, task: &TaskRun) -> Result<Vec<pnet_stdlib::Value>, String> {
        let Some(def) = self.defs.get(task.module) else {
            self.resolved.remove(&task.module);
            return Err(format!(
                "task {} names module implementation {}, which the agent did not announce",
                task.task, task.module
            ));
        };
        self.run_def(shared, task, &def)
            .map_err(|e| match e.strip_prefix(WHOLE) {
                Some(e) => format!("{}: {e}", def.location),
                None => format!(
                    "{}: module {}.{}: {e}",
                    def.location, def.module, def.function
                ),
            })
    }

    fn run_def(
        &mut self,
        shared: &Shared,
        task: &TaskRun,
        def: &ModuleDef,
    ) -> Result<Vec<pnet_stdlib::Value>, String> {
        if task.inputs.len() != def.inputs.len() {
            return Err(format!(
                "got {} input values for {} input ports",
                task.inputs.len(),
                def.inputs.len()
            ));
        }
        self.encode_inputs(def, task);
        let resolved = match self.resolved.get(&def.id) {
            Some(r) => r.clone(),
            None => {
                let r = self.resolve(def)?;
                self.resolved.insert(def.id, r.clone());
                r
            }
        };
        let memory = task
            .memory
            .as_ref()
            .filter(|m| !m.buffers.is_empty() || !m.gets.is_empty() || !m.puts.is_empty());
        match resolved {
            Resolved::Native { path, function, .. } if self.isolate => match memory {
                None => self.call_isolated(shared, task, def, &path, &function),
                Some(mem) => Err(format!(
                    "the call has memory buffers or transfers ({} bytes), which modules \
                     isolated in a child process (--isolate-modules) cannot have yet; run \
                     this net without --isolate-modules",
                    mem.buffer_bytes()
                )),
            },
            Resolved::Native { call, .. } => match memory {
                None => {
                    let info = host::CallInfo {
                        worker_name: &self.worker,
                        hostname: &self.host,
                        task: task.task,
                        cancelled: &shared.cancelled,
                        buffers: &[],
                        log: Some(&self.log),
                    };
                    // SAFETY: `call` comes from a loaded library (kept alive by `resolved`)
                    // whose descriptor declared ABI version 1.
                    let status =
                        unsafe { host::call_with(call, &info, &self.input, &mut self.output) };
                    self.native_result(def, status)
                }
                Some(mem) => self.call_with_memory(shared, task, def, call, mem),
            },
            Resolved::Command { program, arg } => {
                if let Some(mem) = memory {
                    let what = if mem.buffers.is_empty() {
                        "memory transfers".to_string()
                    } else {
                        mem.buffers
                            .iter()
                            .map(|b| format!("`{}`", b.name))
                            .collect::<Vec<_>>()
                            .join(", ")
                    };
                    return Err(format!(
                        "{} is a command module, which cannot have memory buffers (the call \
                         has {what}); only native modules (lib{}.so) can",
                        program.display(),
                        def.module
                    ));
                }
                let out = self.run_command(shared, task, def, &program, arg.as_deref())?;
                let (answer, before) = split_answer(&out);
                if !before.is_empty() {
                    // The standard output before the answer goes first, then the standard
                    // error (when it was written is not known).
                    let mut log = self.log.borrow_mut();
                    let (err, dropped) = log.take();
                    log.skipped(dropped);
                    log.push(before);
                    log.push(err.as_bytes());
                }
                decode_outputs(def, answer)
            }
        }
    }

    /// The outputs of a native call that returned `status` (its output in `self.output`).
    fn native_result(
        &self,
        def: &ModuleDef,
        status: i32,
    ) -> Result<Vec<pnet_stdlib::Value>, String> {
        if status != 0 {
            let message = String::from_utf8_lossy(&self.output);
            return Err(if message.is_empty() {
                format!("failed with status {status}")
            } else {
                message.into_owned()
            });
        }
        decode_outputs(def, &self.output)
    }

    /// A native call in the module host (started here when there is none): a crash of the
    /// module fails the task and ends only the host.
    fn call_isolated(
        &mut self,
        shared: &Shared,
        task: &TaskRun,
        def: &ModuleDef,
        lib: &Path,
        function: &str,
    ) -> Result<Vec<pnet_stdlib::Value>, String> {
        if !shared.starting_command() {
            return Err("cancelled before it started".into());
        }
        let mut host = match self.module_host.take() {
            Some(h) => h,
            None => match self.start_module_host() {
                Ok(h) => h,
                Err(e) => {
                    shared.set_child(None);
                    return Err(e);
                }
            },
        };
        // A cancel (or the worker's stop) kills the host's group, ending the call.
        shared.set_child(Some(host.pid));
        let call = crate::helper::HostCall {
            lib: lib.display().to_string(),
            function: function.to_string(),
            worker: self.worker.clone(),
            hostname: self.host.clone(),
            task: task.task,
            input: std::mem::take(&mut self.input),
        };
        let sent = crate::helper::write_frame(&mut host.to, &call);
        self.input = call.input;
        let answer = sent
            .and_then(|()| crate::helper::read_frame::<crate::helper::HostAnswer>(&mut host.from));
        match answer {
            Ok(Some(answer)) => {
                shared.set_child(None);
                self.module_host = Some(host);
                if !answer.log.is_empty() {
                    let mut log = self.log.borrow_mut();
                    log.skipped(answer.log_dropped);
                    log.push(answer.log.as_bytes());
                }
                self.output = answer.output;
                self.native_result(def, answer.status)
            }
            Ok(None) | Err(_) => {
                // The host is gone (or unusable): wait for its end without reaping, forget
                // its group, then reap (as for commands).
                drop(host.to);
                let _ = host.child.kill();
                wait_no_reap(host.pid);
                shared.set_child(None);
                let status = host.child.wait().ok();
                let how = match status.and_then(|s| s.signal()) {
                    Some(sig) => format!("crashed with {}", pnet_launch::signal_name(sig)),
                    None => match status.and_then(|s| s.code()) {
                        Some(code) => format!("ended its process with exit status {code}"),
                        None => "ended its process".to_string(),
                    },
                };
                Err(format!(
                    "{WHOLE}module `{}.{}` {how} (isolated in a child process of worker \
                     `{}`, which goes on)",
                    def.module, def.function, self.worker
                ))
            }
        }
    }

    fn start_module_host(&mut self) -> Result<ModuleHost, String> {
        let Some(helper) = &self.helper else {
            return Err(
                "modules cannot be isolated: this worker does not know its own \
                        program to start the module host"
                    .into(),
            );
        };
        let mut cmd = Command::new(helper);
        cmd.arg(crate::helper::MODULE_HOST)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .process_group(0);
        crate::helper::die_with_parent(&mut cmd, libc::SIGKILL);
        let mut child = spawn(&mut cmd).map_err(|e| {
            format!(
                "cannot start the module host ({} {}): {e}",
                helper.display(),
                crate::helper::MODULE_HOST
            )
        })?;
        let pid = i32::try_from(child.id()).unwrap_or(0);
        let (Some(to), Some(from)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("the module host has no pipes".into());
        };
        Ok(ModuleHost {
            child,
            pid,
            to,
            from: std::io::BufReader::new(from),
        })
    }

    /// A native call with memory buffers: allocates them, runs the gets, calls (with the
    /// guard pages armed), checks the guards, decodes the outputs, runs the puts.
    fn call_with_memory(
        &mut self,
        shared: &Shared,
        task: &TaskRun,
        def: &ModuleDef,
        call: CallFn,
        mem: &MemoryTask,
    ) -> Result<Vec<pnet_stdlib::Value>, String> {
        let Some(memory) = self.memory.as_mut() else {
            return Err(format!(
                "the call has memory buffers ({} bytes), but this worker has no working memory \
                 (it was started without --shm; give its worker type an shm size in the \
                 topology)",
                mem.buffer_bytes()
            ));
        };
        let limit = memory.limit();
        let mut bufs = LocalBuffers::allocate(&mem.buffers, limit).map_err(|e| e.to_string())?;
        if bufs.len() != mem.buffers.len() {
            return Err(format!(
                "allocated {} memory buffers for {} buffer specifications",
                bufs.len(),
                mem.buffers.len()
            ));
        }
        pnet_memory::run_gets(mem, &mut bufs, memory.peers()).map_err(|e| e.to_string())?;
        let buffers: Vec<host::Buffer<'_>> = mem
            .buffers
            .iter()
            .enumerate()
            .map(|(i, spec)| host::Buffer {
                name: &spec.name,
                ptr: bufs.ptr(i),
                size: bufs.size(i),
                read_only: spec.read_only,
            })
            .collect();
        let lines = guard_lines(&self.worker, task.task, def, &bufs, mem);
        let info = host::CallInfo {
            worker_name: &self.worker,
            hostname: &self.host,
            task: task.task,
            cancelled: &shared.cancelled,
            buffers: &buffers,
            log: Some(&self.log),
        };
        let armed = crate::fault::arm(lines);
        // SAFETY: `call` comes from a loaded library (kept alive by the caller's `resolved`)
        // whose descriptor declared ABI version 1; every buffer points to its own mapping of
        // `size` bytes, which nothing else touches during the call.
        let status = unsafe { host::call_with(call, &info, &self.input, &mut self.output) };
        drop(armed);
        drop(buffers);
        bufs.check_guards().map_err(|e| e.to_string())?;
        let outputs = self.native_result(def, status)?;
        if shared.cancelled.load(Ordering::SeqCst) {
            // Answered as cancelled: the results must not reach global memory.
            return Ok(outputs);
        }
        let memory = self.memory.as_mut().ok_or("the working memory went away")?;
        pnet_memory::run_puts(mem, &bufs, memory.peers()).map_err(|e| e.to_string())?;
        Ok(outputs)
    }

    /// The JSON object of the inputs into `self.input`.
    fn encode_inputs(&mut self, def: &ModuleDef, task: &TaskRun) {
        let buf = &mut self.input;
        buf.clear();
        buf.push(b'{');
        for (i, ((name, _), value)) in def.inputs.iter().zip(&task.inputs).enumerate() {
            if i > 0 {
                buf.push(b',');
            }
            // Writing to a vector cannot fail, and these values always serialize.
            let _ = serde_json::to_writer(&mut *buf, name);
            buf.push(b':');
            let _ = serde_json::to_writer(&mut *buf, &to_json(value));
        }
        buf.push(b'}');
    }

    /// Finds the implementation of `def` on the module path.
    fn resolve(&mut self, def: &ModuleDef) -> Result<Resolved, String> {
        let (m, f) = (def.module.as_str(), def.function.as_str());
        for name in [m, f] {
            if name.is_empty() || name.contains('/') || name == "." || name == ".." {
                return Err(format!("invalid module or function name `{name}`"));
            }
        }
        let lib_name = format!("lib{m}.so");
        let exe_name = format!("{m}.{f}");
        // The job's own module path first (gspc submit --module-path), then the worker's.
        let mut dirs: Vec<PathBuf> = self.defs.path(def.id).map_or(Vec::new(), |p| p.to_vec());
        for d in &self.dirs {
            if !dirs.contains(d) {
                dirs.push(d.clone());
            }
        }
        for dir in &dirs {
            let lib = dir.join(&lib_name);
            if lib.is_file() {
                let loaded = self.load(&lib)?;
                return match loaded.module.function_for(f, def.target.as_deref()) {
                    Some(func) => Ok(Resolved::Native {
                        call: func.call,
                        _lib: loaded.clone(),
                        path: lib.clone(),
                        function: func.name.clone(),
                    }),
                    None => {
                        let names: Vec<&str> = loaded
                            .module
                            .functions
                            .iter()
                            .map(|f| f.name.as_str())
                            .collect();
                        let wanted = match &def.target {
                            Some(t) => format!("`{}` or `{f}`", host::target_name(f, t)),
                            None => format!("`{f}`"),
                        };
                        Err(format!(
                            "{} has no function {wanted} (it has: {})",
                            lib.display(),
                            if names.is_empty() {
                                "none".to_string()
                            } else {
                                names.join(", ")
                            }
                        ))
                    }
                };
            }
            let exe = dir.join(&exe_name);
            if is_executable(&exe) {
                return Ok(Resolved::Command {
                    program: exe,
                    arg: None,
                });
            }
            let exe = dir.join(m);
            if is_executable(&exe) {
                return Ok(Resolved::Command {
                    program: exe,
                    arg: Some(f.to_string()),
                });
            }
        }
        let searched = if dirs.is_empty() {
            "the module path is empty (set it with --module-path, PNET_MODULE_PATH or the \
             agent's module path)"
                .to_string()
        } else {
            format!(
                "searched {}",
                dirs.iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        let hint = nearest_module(&dirs, m)
            .map(|(name, path)| format!("; did you mean `{name}` ({})?", path.display()))
            .unwrap_or_default();
        Err(format!(
            "not found: no {lib_name}, executable {exe_name} or executable {m}; {searched}{hint}"
        ))
    }

    fn load(&mut self, path: &Path) -> Result<Arc<Loaded>, String> {
        let key = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        if let Some(l) = self.libs.get(&key) {
            return Ok(l.clone());
        }
        // SAFETY: loading a module library runs its initialisers; module libraries are code
        // the user asked to run.
        let lib = unsafe { libloading::Library::new(&key) }
            .map_err(|e| format!("cannot load {}: {e}", path.display()))?;
        // SAFETY: the symbol has the ABI's entry point type.
        let entry = unsafe { lib.get::<EntryFn>(ENTRY_SYMBOL.as_bytes()) }.map_err(|_| {
            format!(
                "{} is not a pnet module: it does not export `{ENTRY_SYMBOL}`",
                path.display()
            )
        })?;
        // SAFETY: the entry point returns a descriptor as the ABI describes.
        let module = unsafe { host::read_descriptor(entry()) }
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let loaded = Arc::new(Loaded { _lib: lib, module });
        self.libs.insert(key, loaded.clone());
        Ok(loaded)
    }

    /// Runs a command module; returns its standard output.
    fn run_command(
        &mut self,
        shared: &Shared,
        task: &TaskRun,
        def: &ModuleDef,
        program: &Path,
        arg: Option<&str>,
    ) -> Result<Vec<u8>, String> {
        // With the supervisor (see `crate::helper`), the command's whole process group dies
        // with the worker; without it, just the command (by a parent-death SIGKILL).
        let mut cmd = match &self.helper {
            Some(helper) => {
                let mut cmd = Command::new(helper);
                cmd.arg(crate::helper::SUPERVISE)
                    .arg(std::process::id().to_string())
                    .arg(program);
                crate::helper::die_with_parent(&mut cmd, libc::SIGTERM);
                cmd
            }
            None => {
                let mut cmd = Command::new(program);
                crate::helper::die_with_parent(&mut cmd, libc::SIGKILL);
                cmd
            }
        };
        if let Some(a) = arg {
            cmd.arg(a);
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("PNET_MODULE", &def.module)
            .env("PNET_FUNCTION", &def.function)
            .env("PNET_TASK", task.task.to_string())
            .env("PNET_WORKER", &self.worker)
            .env("PNET_WORKER_PID", std::process::id().to_string())
            // Its own process group, so that cancelling kills whatever it started too.
            .process_group(0);
        if !shared.starting_command() {
            return Err("cancelled before it started".into());
        }
        let spawned = spawn(&mut cmd);
        if spawned.is_err() {
            shared.set_child(None);
        }
        let mut child = spawned.map_err(|e| format!("cannot start {}: {e}", program.display()))?;
        let pid = i32::try_from(child.id()).unwrap_or(0);
        shared.set_child(Some(pid));
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let input = &self.input;
        let (out, err) = std::thread::scope(|s| {
            if let Some(mut stdin) = stdin {
                // Small inputs fit in the pipe: no thread needed.
                if input.len() <= 4096 {
                    let _ = stdin.write_all(input);
                } else {
                    s.spawn(move || {
                        let _ = stdin.write_all(input);
                    });
                }
            }
            let err = stderr.map(|e| s.spawn(move || read_tail(e, TASK_LOG_LIMIT)));
            let out = stdout.map(|o| read_limited(o, MAX_OUTPUT));
            let err = err.and_then(|h| h.join().ok()).unwrap_or_default();
            (out, err)
        });
        // Wait for the exit without reaping, forget the group, then reap: a cancel between
        // the two cannot signal a recycled process group.
        wait_no_reap(pid);
        shared.set_child(None);
        let status = child
            .wait()
            .map_err(|e| format!("cannot wait for {}: {e}", program.display()))?;
        let (err, cut) = err;
        self.log.borrow_mut().skipped(cut);
        self.log.borrow_mut().push(&err);
        let err = &err[err.len().saturating_sub(STDERR_TAIL)..];
        if !status.success() {
            let how = match (status.code(), status.signal()) {
                (Some(code), _) => format!("exited with status {code}"),
                (None, Some(sig)) => format!("was killed by signal {sig}"),
                _ => format!("ended with {status}"),
            };
            return Err(format!(
                "{} {how}{}",
                program.display(),
                stderr_tail_message(err)
            ));
        }
        match out {
            Some(Ok(out)) => Ok(out),
            Some(Err(e)) => Err(format!("{}: {e}", program.display())),
            None => Ok(Vec::new()),
        }
    }
}

/// The line the fault handler prints for each guard page of the call's buffers (the buffer
/// nearest to the guard page is the one the module ran off).
fn guard_lines(
    worker: &str,
    task: u64,
    def: &ModuleDef,
    bufs: &LocalBuffers,
    mem: &MemoryTask,
) -> Vec<(std::ops::Range<usize>, String)> {
    let spans: Vec<(usize, usize)> = (0..bufs.len())
        .map(|i| {
            let start = bufs.ptr(i) as usize;
            let size = usize::try_from(bufs.size(i)).unwrap_or(usize::MAX);
            (start, start.saturating_add(size))
        })
        .collect();
    bufs.guard_ranges()
        .into_iter()
        .map(|range| {
            let distance = |(start, end): (usize, usize)| {
                if range.end <= start {
                    start - range.end
                } else {
                    range.start.saturating_sub(end)
                }
            };
            let owner = (0..spans.len())
                .min_by_key(|i| distance(spans[*i]))
                .and_then(|i| mem.buffers.get(i))
                .map_or("?", |b| b.name.as_str());
            let line = format!(
                "gspc-worker {worker}: task {task}: module {} function {} wrote outside memory \
                 buffer {owner}; stopping the worker so that no memory is corrupted",
                def.module, def.function
            );
            (range, line)
        })
        .collect()
}

/// Spawns, retrying a few times on ETXTBSY (a script just written, whose write handle a
/// concurrent fork still holds for a moment).
pub(crate) fn spawn(cmd: &mut Command) -> std::io::Result<std::process::Child> {
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 20 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            r => return r,
        }
    }
}

/// `: last lines of stderr: ...` or nothing.
fn stderr_tail_message(err: &[u8]) -> String {
    let text = String::from_utf8_lossy(err);
    let lines: Vec<&str> = text.trim_end().lines().collect();
    if lines.is_empty() {
        return String::new();
    }
    let start = lines.len().saturating_sub(STDERR_LINES);
    format!("; stderr:\n{}", lines[start..].join("\n"))
}

fn read_limited(mut r: impl Read, limit: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let n = (&mut r)
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("cannot read its output: {e}"))?;
    if n > limit {
        // Drain the rest so the command does not block on a full pipe.
        let _ = std::io::copy(&mut r, &mut std::io::sink());
        return Err(format!("its output is larger than {limit} bytes"));
    }
    Ok(out)
}

/// The last `keep` bytes of a stream, read to its end, and how many bytes came before.
fn read_tail(mut r: impl Read, keep: usize) -> (Vec<u8>, u64) {
    let mut tail = Vec::new();
    let mut cut = 0u64;
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                tail.extend_from_slice(&buf[..n]);
                if tail.len() > 2 * keep {
                    cut += (tail.len() - keep) as u64;
                    tail.drain(..tail.len() - keep);
                }
            }
        }
    }
    if tail.len() > keep {
        cut += (tail.len() - keep) as u64;
        tail.drain(..tail.len() - keep);
    }
    (tail, cut)
}

/// A command module's answer in its standard output and what it printed before: the whole
/// output when it is one JSON value (or not JSON at all: the error says so), else its last
/// line when that is a JSON object (the lines before go to the task's log).
fn split_answer(out: &[u8]) -> (&[u8], &[u8]) {
    let trimmed = out.trim_ascii();
    if trimmed.is_empty() || serde_json::from_slice::<serde::de::IgnoredAny>(trimmed).is_ok() {
        return (out, &[]);
    }
    let body = out.trim_ascii_end();
    let at = body.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let last = &body[at..];
    if last.trim_ascii_start().starts_with(b"{")
        && serde_json::from_slice::<serde_json::Map<String, Json>>(last).is_ok()
    {
        return (last, &out[..at]);
    }
    (out, &[])
}

/// Waits until process `pid` (a child) has exited, leaving it to be reaped.
fn wait_no_reap(pid: i32) {
    if pid <= 0 {
        return;
    }
    loop {
        // SAFETY: `info` is a valid out-parameter; waiting for our own child.
        let rc = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            )
        };
        if rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
}

fn is_executable(p: &Path) -> bool {
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Checks and decodes the JSON object of a module's outputs.
pub fn decode_outputs(def: &ModuleDef, bytes: &[u8]) -> Result<Vec<pnet_stdlib::Value>, String> {
    let trimmed = bytes.trim_ascii();
    if trimmed.is_empty() && def.outputs.is_empty() {
        return Ok(Vec::new());
    }
    let obj = match serde_json::from_slice::<Json>(trimmed) {
        Ok(Json::Object(obj)) => obj,
        Ok(other) => {
            return Err(format!(
                "outputs: expected a JSON object of the output ports, found {}",
                short(&other.to_string())
            ));
        }
        Err(e) => {
            return Err(format!(
                "outputs: not JSON ({e}): {}",
                short(&String::from_utf8_lossy(trimmed))
            ));
        }
    };
    let mut values = Vec::with_capacity(def.outputs.len());
    for (name, ty) in &def.outputs {
        let Some(json) = obj.get(name) else {
            return Err(format!("outputs: missing output port `{name}` ({ty})"));
        };
        match from_json(json, ty) {
            Ok(v) => values.push(v),
            Err(_) => {
                return Err(from_json_at(json, ty, &format!("outputs.{name}"))
                    .err()
                    .unwrap_or_default());
            }
        }
    }
    if obj.len() > def.outputs.len()
        && let Some(extra) = obj
            .keys()
            .find(|k| !def.outputs.iter().any(|(n, _)| n == *k))
    {
        let known: Vec<&str> = def.outputs.iter().map(|(n, _)| n.as_str()).collect();
        return Err(format!(
            "outputs: unknown output port `{extra}` (the output ports are: {})",
            if known.is_empty() {
                "none".to_string()
            } else {
                known.join(", ")
            }
        ));
    }
    Ok(values)
}

fn short(s: &str) -> String {
    let mut t: String = s.chars().take(200).collect();
    if t.len() < s.len() {
        t.push_str("...");
    }
    t
}

/// The module in `dirs` whose name is nearest to the missing `m` (a likely misspelling):
/// its name and file (`libNAME.so`, or an executable `NAME` or `NAME.F`).
fn nearest_module(dirs: &[PathBuf], m: &str) -> Option<(String, PathBuf)> {
    let mut found: Vec<(String, PathBuf)> = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        // (Sorted: the same suggestion whatever the folder's order.)
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let Ok(file) = e.file_name().into_string() else {
                continue;
            };
            let name = match file.strip_prefix("lib").and_then(|r| r.strip_suffix(".so")) {
                Some(lib) => lib.to_string(),
                None if is_executable(&e.path()) => {
                    file.split('.').next().unwrap_or_default().to_string()
                }
                None => continue,
            };
            if !name.is_empty() && !found.iter().any(|(n, _)| *n == name) {
                found.push((name, e.path()));
            }
        }
    }
    let best = pnet_stdlib::suggest::nearest(m, found.iter().map(|(n, _)| n.as_str()))?;
    found.iter().find(|(n, _)| n == best).cloned()
}

#[cfg(test)]
mod tests;
