//! The runtime's wire protocol.
//!
//! Every connection carries length-delimited frames (a 4-byte big-endian length, then that
//! many bytes: one message encoded with postcard). A worker opens the connection and sends a
//! [`Hello`] first; the agent checks its protocol version (read before the rest of the
//! message, so that a peer of another version gets a clear refusal rather than garbage) and
//! the per-run secret, then answers [`AgentMsg::Welcome`] or [`AgentMsg::Refused`] and
//! closes. After the welcome, the agent sends [`AgentMsg::Run`] batches and the worker
//! answers each task with [`WorkerMsg::Done`], [`WorkerMsg::Failed`] or
//! [`WorkerMsg::Cancelled`]; both sides send heartbeats.
//!
//! Values travel as [`pnet_stdlib::Value`] (postcard); a module's inputs and outputs are in
//! the port order of its [`ModuleDef`], sent once in the welcome, so a task carries only
//! values.
//!
//! Only this crate (besides the bundle and stdlib) derives `Serialize`.

use std::time::Duration;

use pnet_stdlib::{Type, Value};
use serde::{Deserialize, Serialize};

pub mod frame;
pub mod memory;
pub mod peer;
pub mod property;
pub mod secret;

pub use frame::{FrameError, MAX_FRAME, read_msg, recv, send, write_msg};
pub use peer::{PREAUTH_CONNECTIONS, PREAUTH_MAX_FRAME, PREAUTH_TIMEOUT, check_peer};
pub use secret::Secret;

/// The protocol version; a peer with another version is refused.
pub const PROTOCOL_VERSION: u32 = 4;

/// The most log text a worker keeps of one task (the tail: what comes before is counted in
/// [`WorkerMsg::Log`]'s `dropped`): 64 KiB.
pub const TASK_LOG_LIMIT: usize = 64 * 1024;

/// When a task ran, as the worker saw it on its own clock: microseconds from the worker's
/// receipt of the task (the [`AgentMsg::Run`] frame that carried it) to its start, and from
/// its start to its end. The agent places them on its clock from the time it sent the task,
/// so no clocks need to agree (the network's delay shifts a task by at most one trip).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskTimes {
    pub queued_us: u64,
    pub run_us: u64,
}

/// How often both sides send a heartbeat (a side that sent another message within the
/// interval may skip it: any message is a sign of life).
pub const HEARTBEAT_INTERVAL: Duration = Duration::from_millis(250);
/// A peer silent for this long is considered lost (noticed within 1 to 2 seconds). This is
/// the agent's bound: it decides that a worker is lost and runs its tasks elsewhere.
pub const HEARTBEAT_TIMEOUT: Duration = Duration::from_millis(1500);
/// How long a worker waits for a word of its agent before it gives up and exits. Longer
/// than [`HEARTBEAT_TIMEOUT`]: a crashed agent closes the connection (the worker sees that at
/// once), so only a frozen or cut-off agent is silent, and an agent that is merely slow
/// (thousands of workers, a busy machine) must not lose its workers. (A worker cut off from
/// its agent was declared lost by the agent long before.)
pub const AGENT_SILENCE_TIMEOUT: Duration = Duration::from_secs(10);

/// The environment variable through which launchers hand the run's secret to a worker
/// (as 64 hex digits); a worker started with `--secret-stdin` reads it from its first line
/// of standard input instead, which keeps it out of `ps` on remote hosts.
pub const SECRET_ENV: &str = "GSPC_SECRET";

/// The first message of a worker. `protocol` comes first so that it can be decoded alone.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    pub protocol: u32,
    pub secret: Secret,
    /// The worker's name from the plan (for example `compute-1-host1`).
    pub name: String,
    pub host: String,
    pub pid: u32,
    pub capabilities: Vec<String>,
    /// The socket it is pinned to, if any.
    pub socket: Option<u32>,
}

/// One module implementation a worker may be asked to run: the module (library or command)
/// name, the function, and the port names and types of its inputs (in and inout ports) and
/// outputs (out and inout ports), in port order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModuleDef {
    pub id: u32,
    pub module: String,
    pub function: String,
    /// The `target` of a `modules` alternative.
    pub target: Option<String>,
    pub inputs: Vec<(String, Type)>,
    pub outputs: Vec<(String, Type)>,
    pub pass_context: bool,
    /// `file:line:col` of the module element, for messages.
    pub location: String,
}

/// One task to run: a module call with its input values, in the order of
/// [`ModuleDef::inputs`], and its memory buffers and transfers, if it has any.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskRun {
    pub task: u64,
    pub module: u32,
    pub inputs: Vec<Value>,
    /// Since protocol version 2.
    pub memory: Option<memory::MemoryTask>,
}

/// Agent to worker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum AgentMsg {
    /// The handshake succeeded. `modules` are every module implementation of the job.
    Welcome {
        worker: u32,
        modules: Vec<ModuleDef>,
        /// Directories searched for native libraries and command modules, in order.
        module_path: Vec<String>,
    },
    /// The handshake failed; the connection closes after this message.
    Refused {
        reason: String,
    },
    /// Tasks to run, in order (a worker runs one task at a time and queues the rest).
    Run(Vec<TaskRun>),
    /// Cancel a queued or running task (eureka, job failure, user cancellation); the worker
    /// answers [`WorkerMsg::Cancelled`] (or the task's result, if it finished first).
    Cancel {
        task: u64,
    },
    Heartbeat,
    /// Stop: cancel everything and exit.
    Shutdown,
    /// More module implementations (a persistent runtime sends those of each job submitted
    /// after the worker's Welcome; ids are unique over the runtime's life).
    Modules {
        modules: Vec<ModuleDef>,
    },
    /// Module implementations no task will name again (their job has ended).
    ForgetModules {
        ids: Vec<u32>,
    },
    /// Give back these tasks if they are still queued (not started): the agent moves them
    /// to an idle worker (work stealing). The worker answers [`WorkerMsg::Returned`] with
    /// the ones it dropped; the others run (or ran) as usual. Since protocol version 3.
    Steal {
        tasks: Vec<u64>,
    },
    /// Module implementations of a job with its own module path (`gspc submit
    /// --module-path`, and the net's folder): the worker looks for these ids in
    /// `module_path` first, then along its own path. Sent instead of [`AgentMsg::Modules`],
    /// and again after the Welcome of a worker that joins while the job runs (replacing what
    /// the Welcome said of these ids).
    ModulesAt {
        modules: Vec<ModuleDef>,
        module_path: Vec<String>,
    },
}

/// Worker to agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum WorkerMsg {
    Hello(Hello),
    /// A task finished; outputs in the order of [`ModuleDef::outputs`].
    Done {
        task: u64,
        outputs: Vec<Value>,
    },
    /// A task failed (the module reported an error, could not be found, crashed, or gave
    /// outputs that do not fit); the message says which.
    Failed {
        task: u64,
        message: String,
    },
    /// A task was cancelled before it finished.
    Cancelled {
        task: u64,
    },
    /// Alive; `running` is the task running now.
    Heartbeat {
        running: Option<u64>,
    },
    /// Sent once right after the welcome by a worker with working memory: its segment (whose
    /// `id` the worker sets to the id the welcome gave it).
    Memory(memory::SegmentInfo),
    /// The answer to [`AgentMsg::Steal`]: `tasks` were queued and are dropped; `kept` are the
    /// other tasks asked for (started, finished, or unknown). Since protocol version 3.
    Returned {
        tasks: Vec<u64>,
        kept: Vec<u64>,
    },
    /// [`WorkerMsg::Done`] with the task's times. Since protocol version 4.
    DoneAt {
        task: u64,
        outputs: Vec<Value>,
        times: TaskTimes,
    },
    /// [`WorkerMsg::Failed`] with the task's times. Since protocol version 4.
    FailedAt {
        task: u64,
        message: String,
        times: TaskTimes,
    },
    /// What a task logged, sent before its answer when there is any: a command module's
    /// standard error and the standard output beyond its answer, a native module's log lines
    /// (`pnet_module_sdk::log`). At most [`TASK_LOG_LIMIT`] bytes, the tail; `dropped` bytes
    /// before it were cut. Since protocol version 4.
    Log {
        task: u64,
        text: String,
        dropped: u64,
    },
    /// The first message of a leaf agent (instead of [`WorkerMsg::Hello`]): a leaf is one
    /// fat worker to its root (see [`LeafHello`]). An agent that does not know it refuses it
    /// as "not a Hello".
    LeafHello(LeafHello),
    /// Several messages in one frame, in order (a leaf agent sends its workers' answers up
    /// this way). Not nested.
    Batch(Vec<WorkerMsg>),
    /// A leaf agent's capacity changed (its workers came or went): the root keeps at most
    /// this many of its tasks on it. 0: place nothing on it for now.
    Capacity {
        capacity: u32,
    },
    /// A leaf agent lost the worker that was running `task`: it runs the task again on
    /// another of its workers (no answer for the lost run); the root counts the retry
    /// against `maximum_number_of_retries` and cancels the task when the limit is passed.
    Retried {
        task: u64,
    },
    /// A leaf agent's workers as they are now (all of them; sent when one joins or is lost,
    /// and about once a second while the leaf has workers): the root's status shows them
    /// under the leaf. Since leaf protocol version 2.
    LeafWorkers(Vec<LeafWorker>),
    /// Messages of one worker of a leaf agent (its answers and logs; the `worker` of its
    /// [`LeafWorker`]), so that the root's task records name the worker under the leaf that
    /// ran each task. Not nested. Since leaf protocol version 2.
    OfWorker {
        worker: u32,
        msgs: Vec<WorkerMsg>,
    },
}

/// A worker under a leaf agent, as the leaf reports it ([`WorkerMsg::LeafWorkers`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LeafWorker {
    /// The leaf's number for it ([`WorkerMsg::OfWorker`] names it so).
    pub worker: u32,
    pub name: String,
    pub host: String,
    pub pid: u32,
    pub capabilities: Vec<String>,
    /// Milliseconds from the leaf's last word of it to this report.
    pub heartbeat_age_ms: u64,
    /// The task (the root's id) it runs now.
    pub running: Option<u64>,
    /// Tasks the leaf sent it and it has not answered yet.
    pub in_flight: u32,
    pub done: u64,
}

/// The version of the agent-to-agent protocol (the [`LeafHello`], [`WorkerMsg::Batch`],
/// [`WorkerMsg::Capacity`] and [`WorkerMsg::Retried`] messages; since version 2 also
/// [`WorkerMsg::LeafWorkers`] and [`WorkerMsg::OfWorker`]) on top of [`PROTOCOL_VERSION`]; a
/// root of another version refuses the leaf.
pub const LEAF_PROTOCOL_VERSION: u32 = 2;

/// How many of a leaf agent's workers have numbers of their own in the root's id space (see
/// [`leaf_worker_id`]).
pub const LEAF_WORKER_IDS: u32 = 0x8000;

/// The number the worker `k` of the leaf agent whose Welcome said `leaf` is told in its own
/// Welcome: unique under the root (the root's own workers count up from 0; leaf `leaf` has
/// the block `0x8000_0000 + leaf * LEAF_WORKER_IDS`), because a worker with working memory
/// gives its segment this number, and the root's memory plans name segments by it. None
/// when it has none (`leaf` of 65,536 and more, `k` of [`LEAF_WORKER_IDS`] and more): such
/// a worker's memory cannot join the root's global memory.
pub fn leaf_worker_id(leaf: u32, k: u32) -> Option<u32> {
    (leaf < 0x1_0000 && k < LEAF_WORKER_IDS).then(|| 0x8000_0000 + leaf * LEAF_WORKER_IDS + k)
}

/// A leaf agent's hello: its [`Hello`] (the worker protocol's version, the secret, its name;
/// `capabilities` are those of its workers, which it places tasks on), the leaf protocol's
/// version and its first capacity (how many tasks the root may keep on it: the sum of its
/// workers' windows).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LeafHello {
    pub hello: Hello,
    pub leaf_protocol: u32,
    pub capacity: u32,
}

impl WorkerMsg {
    /// The answer without its times ([`WorkerMsg::DoneAt`] as [`WorkerMsg::Done`],
    /// [`WorkerMsg::FailedAt`] as [`WorkerMsg::Failed`]) and the times, if it had any.
    pub fn split_times(self) -> (WorkerMsg, Option<TaskTimes>) {
        match self {
            WorkerMsg::DoneAt {
                task,
                outputs,
                times,
            } => (WorkerMsg::Done { task, outputs }, Some(times)),
            WorkerMsg::FailedAt {
                task,
                message,
                times,
            } => (WorkerMsg::Failed { task, message }, Some(times)),
            m => (m, None),
        }
    }
}

/// Decodes just the protocol version at the front of a [`WorkerMsg::Hello`] frame.
pub fn hello_protocol(frame: &[u8]) -> Option<u32> {
    leading_version(frame)
}

/// The tag of [`WorkerMsg::LeafHello`] on the wire.
const LEAF_HELLO_TAG: u32 = 10;

/// Decodes just the worker protocol's version at the front of a [`WorkerMsg::LeafHello`]
/// frame (the first field of its [`Hello`]).
pub fn leaf_hello_protocol(frame: &[u8]) -> Option<u32> {
    let (tag, rest) = postcard::take_from_bytes::<u32>(frame).ok()?;
    if tag != LEAF_HELLO_TAG {
        return None;
    }
    postcard::take_from_bytes::<u32>(rest).ok().map(|(v, _)| v)
}

/// The version at the front of a frame holding the first variant of a message enum whose
/// first field is a `u32` protocol version (the hellos of both protocols): the enum tag
/// (varint 0), then the version, decoded without the rest of the message.
pub(crate) fn leading_version(frame: &[u8]) -> Option<u32> {
    let (tag, rest) = postcard::take_from_bytes::<u32>(frame).ok()?;
    if tag != 0 {
        return None;
    }
    postcard::take_from_bytes::<u32>(rest).ok().map(|(v, _)| v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_is_readable_alone() {
        let hello = WorkerMsg::Hello(Hello {
            protocol: 77,
            secret: Secret::from_hex(&"ab".repeat(32)).unwrap(),
            name: "w".into(),
            host: "h".into(),
            pid: 1,
            capabilities: vec!["A".into()],
            socket: None,
        });
        let bytes = postcard::to_allocvec(&hello).unwrap();
        assert_eq!(hello_protocol(&bytes), Some(77));
        let back: WorkerMsg = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back, hello);
    }

    #[test]
    fn old_agent_messages_keep_their_tags() {
        // Appended variants must not renumber the old ones.
        let tag = |m: &AgentMsg| postcard::to_allocvec(m).unwrap()[0];
        assert_eq!(tag(&AgentMsg::Heartbeat), 4);
        assert_eq!(tag(&AgentMsg::Shutdown), 5);
        assert_eq!(tag(&AgentMsg::Modules { modules: vec![] }), 6);
        let m = AgentMsg::ForgetModules { ids: vec![3, 4] };
        assert_eq!(tag(&m), 7);
        let back: AgentMsg = postcard::from_bytes(&postcard::to_allocvec(&m).unwrap()).unwrap();
        assert_eq!(back, m);
        assert_eq!(tag(&AgentMsg::Steal { tasks: vec![1] }), 8);
        let m = AgentMsg::ModulesAt {
            modules: vec![],
            module_path: vec!["/m".into()],
        };
        assert_eq!(tag(&m), 9);
        let back: AgentMsg = postcard::from_bytes(&postcard::to_allocvec(&m).unwrap()).unwrap();
        assert_eq!(back, m);
        let r = postcard::to_allocvec(&WorkerMsg::Returned {
            tasks: vec![1],
            kept: vec![],
        })
        .unwrap();
        assert_eq!(r[0], 6);
        let m = WorkerMsg::DoneAt {
            task: 1,
            outputs: vec![Value::Long(2)],
            times: TaskTimes {
                queued_us: 3,
                run_us: 4,
            },
        };
        let b = postcard::to_allocvec(&m).unwrap();
        assert_eq!(b[0], 7);
        assert_eq!(postcard::from_bytes::<WorkerMsg>(&b).unwrap(), m);
        let (plain, times) = m.split_times();
        assert_eq!(
            plain,
            WorkerMsg::Done {
                task: 1,
                outputs: vec![Value::Long(2)]
            }
        );
        assert_eq!(times.map(|t| t.run_us), Some(4));
        let log = WorkerMsg::Log {
            task: 1,
            text: "x".into(),
            dropped: 0,
        };
        assert_eq!(postcard::to_allocvec(&log).unwrap()[0], 9);
    }

    #[test]
    fn leaf_messages_follow_the_old_ones() {
        let hello = Hello {
            protocol: PROTOCOL_VERSION,
            secret: Secret::from_hex(&"cd".repeat(32)).unwrap(),
            name: "leaf-1".into(),
            host: "h".into(),
            pid: 2,
            capabilities: vec![],
            socket: None,
        };
        let m = WorkerMsg::LeafHello(LeafHello {
            hello,
            leaf_protocol: LEAF_PROTOCOL_VERSION,
            capacity: 8,
        });
        let b = postcard::to_allocvec(&m).unwrap();
        assert_eq!(u32::from(b[0]), LEAF_HELLO_TAG);
        assert_eq!(leaf_hello_protocol(&b), Some(PROTOCOL_VERSION));
        // An agent that only knows Hello sees no version: "not a Hello".
        assert_eq!(hello_protocol(&b), None);
        assert_eq!(postcard::from_bytes::<WorkerMsg>(&b).unwrap(), m);
        let batch = WorkerMsg::Batch(vec![
            WorkerMsg::Retried { task: 3 },
            WorkerMsg::Cancelled { task: 4 },
        ]);
        let b = postcard::to_allocvec(&batch).unwrap();
        assert_eq!(b[0], 11);
        assert_eq!(postcard::from_bytes::<WorkerMsg>(&b).unwrap(), batch);
        let c = WorkerMsg::Capacity { capacity: 5 };
        assert_eq!(postcard::to_allocvec(&c).unwrap()[0], 12);
        let r = WorkerMsg::Retried { task: 1 };
        assert_eq!(postcard::to_allocvec(&r).unwrap()[0], 13);
        // Workers under leaves have numbers apart from the root's and from each other's.
        assert_eq!(leaf_worker_id(0, 0), Some(0x8000_0000));
        assert_eq!(leaf_worker_id(1, 0), Some(0x8000_8000));
        assert_eq!(leaf_worker_id(0, LEAF_WORKER_IDS - 1), Some(0x8000_7fff));
        assert_eq!(leaf_worker_id(0xffff, LEAF_WORKER_IDS - 1), Some(u32::MAX));
        assert_eq!(leaf_worker_id(0, LEAF_WORKER_IDS), None);
        assert_eq!(leaf_worker_id(0x1_0000, 0), None);
        let w = WorkerMsg::LeafWorkers(vec![LeafWorker {
            worker: 0,
            name: "leaf-1-w0".into(),
            host: "h".into(),
            pid: 3,
            capabilities: vec!["A".into()],
            heartbeat_age_ms: 12,
            running: Some(7),
            in_flight: 2,
            done: 5,
        }]);
        let b = postcard::to_allocvec(&w).unwrap();
        assert_eq!(b[0], 14);
        assert_eq!(postcard::from_bytes::<WorkerMsg>(&b).unwrap(), w);
        let o = WorkerMsg::OfWorker {
            worker: 0,
            msgs: vec![WorkerMsg::Done {
                task: 7,
                outputs: vec![],
            }],
        };
        let b = postcard::to_allocvec(&o).unwrap();
        assert_eq!(b[0], 15);
        assert_eq!(postcard::from_bytes::<WorkerMsg>(&b).unwrap(), o);
    }
}
