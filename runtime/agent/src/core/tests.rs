//! Tests of the core with fake workers over an in-memory transport: every message to and
//! from a worker is round-tripped through postcard, as on the wire. The nets are IR text
//! (`runtime/agent/tests/data/*.ir`, read with [`pnet_bundle::text::parse`]; the runtime must
//! not depend on the compiler).

use std::collections::{HashMap, VecDeque};

use pnet_bundle::Bundle;
use pnet_engine::{RunConfig, RunResult};
use pnet_protocol::{AgentMsg, ModuleDef, TaskRun, WorkerMsg};
use pnet_stdlib::Value;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::*;
use crate::control::{Request, Response};
use crate::sched::SchedConfig;

// ------------------------------------------------------------------------------------------
// The nets: IR text in tests/data.

/// The net `tests/data/NAME.ir` of this crate.
pub(crate) fn net(name: &str) -> Bundle {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(format!("{name}.ir"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    pnet_bundle::text::parse(&text).unwrap_or_else(|e| panic!("{}: {e:?}", path.display()))
}

pub(crate) fn longs(xs: impl IntoIterator<Item = i64>) -> Vec<Value> {
    xs.into_iter().map(Value::Long).collect()
}

pub(crate) fn sorted_longs(r: &RunResult, port: &str) -> Vec<i64> {
    let mut v: Vec<i64> = r
        .outputs
        .iter()
        .find(|(n, _)| n == port)
        .map(|(_, vs)| vs.clone())
        .unwrap_or_default()
        .into_iter()
        .map(|v| match v {
            Value::Long(x) => x,
            other => panic!("not a long: {other}"),
        })
        .collect();
    v.sort_unstable();
    v
}

// ------------------------------------------------------------------------------------------
// The in-memory transport and fake workers.

fn wire<T: Serialize + DeserializeOwned>(m: &T) -> T {
    let bytes = postcard::to_allocvec(m).expect("encodes");
    postcard::from_bytes(&bytes).expect("decodes")
}

#[derive(Default)]
struct FakeWorker {
    queue: VecDeque<TaskRun>,
    received: Vec<(u64, u32)>,
    cancels: Vec<u64>,
    /// Steals asked for and not answered yet.
    steals: Vec<Vec<u64>>,
    /// The memory of each task received.
    memory: Vec<Option<pnet_protocol::memory::MemoryTask>>,
}

type Answer = dyn Fn(&ModuleDef, &[Value]) -> Result<Vec<Value>, String>;

struct Harness<'b> {
    core: Core<'b>,
    defs: Vec<ModuleDef>,
    out: Vec<Command>,
    workers: HashMap<u32, FakeWorker>,
    finished: Option<Result<RunResult, AgentError>>,
    replies: Vec<(u64, Response)>,
    logs: Vec<String>,
    traces: Vec<TraceRecord>,
    task_logs: Vec<(u64, String)>,
    answer: Box<Answer>,
}

fn square_answer(_: &ModuleDef, inputs: &[Value]) -> Result<Vec<Value>, String> {
    match inputs {
        [Value::Long(n)] => Ok(vec![Value::Long(n * n)]),
        other => Err(format!("bad inputs {other:?}")),
    }
}

impl<'b> Harness<'b> {
    fn new(bundle: &'b Bundle, inputs: &[(String, Vec<Value>)], cfg: CoreConfig) -> Harness<'b> {
        let core = Core::new(bundle, inputs, &RunConfig::default(), cfg).expect("core");
        let defs = wire(&core.module_defs().to_vec());
        Harness {
            core,
            defs,
            out: Vec::new(),
            workers: HashMap::new(),
            finished: None,
            replies: Vec::new(),
            logs: Vec::new(),
            traces: Vec::new(),
            task_logs: Vec::new(),
            answer: Box::new(square_answer),
        }
    }

    fn event(&mut self, ev: Event) {
        assert!(self.finished.is_none(), "event after the end: {ev:?}");
        self.core.handle(ev, &mut self.out);
        self.drain();
        self.settle();
    }

    fn settle(&mut self) {
        loop {
            let more = self.core.pump(&mut self.out);
            self.drain();
            if !more {
                break;
            }
        }
    }

    fn drain(&mut self) {
        for cmd in std::mem::take(&mut self.out) {
            match cmd {
                Command::Send { worker, msg } => {
                    let msg = wire(&msg);
                    let w = self.workers.entry(worker).or_default();
                    match msg {
                        AgentMsg::Run(tasks) => {
                            for t in tasks {
                                w.received.push((t.task, t.module));
                                w.memory.push(t.memory.clone());
                                w.queue.push_back(t);
                            }
                        }
                        AgentMsg::Cancel { task } => {
                            w.cancels.push(task);
                        }
                        AgentMsg::Steal { tasks } => w.steals.push(tasks),
                        other => panic!("unexpected message to worker {worker}: {other:?}"),
                    }
                }
                Command::Reply { client, response } => self.replies.push((client, wire(&response))),
                Command::Log(l) => self.logs.push(l),
                Command::Trace(t) => self.traces.push(t),
                Command::TaskLog { task, text, .. } => self.task_logs.push((task, text)),
                Command::Finish(r) => {
                    assert!(self.finished.is_none(), "finished twice");
                    self.finished = Some(*r);
                }
            }
        }
    }

    fn join(&mut self, id: u32, name: &str, caps: &[&str]) {
        self.workers.entry(id).or_default();
        self.event(Event::Joined {
            worker: id,
            name: name.into(),
            capabilities: caps.iter().map(|c| c.to_string()).collect(),
        });
    }

    fn send(&mut self, worker: u32, msg: WorkerMsg) {
        let msg = wire(&msg);
        self.event(Event::Msg { worker, msg });
    }

    /// The worker handles cancellations of queued tasks, then runs its next task. Returns
    /// whether it did something.
    fn step_worker(&mut self, id: u32) -> bool {
        if self.finished.is_some() {
            return false;
        }
        let Some(w) = self.workers.get_mut(&id) else {
            return false;
        };
        let cancels: Vec<u64> = w.cancels.drain(..).collect();
        let mut msgs = Vec::new();
        for c in cancels {
            if let Some(k) = w.queue.iter().position(|t| t.task == c) {
                w.queue.remove(k);
                msgs.push(WorkerMsg::Cancelled { task: c });
            }
        }
        for asked in std::mem::take(&mut w.steals) {
            let (tasks, kept): (Vec<u64>, Vec<u64>) = asked
                .into_iter()
                .partition(|&t| w.queue.iter().any(|q| q.task == t));
            w.queue.retain(|q| !tasks.contains(&q.task));
            msgs.push(WorkerMsg::Returned { tasks, kept });
        }
        if msgs.is_empty()
            && let Some(t) = w.queue.pop_front()
        {
            let def = &self.defs[t.module as usize];
            msgs.push(match (self.answer)(def, &t.inputs) {
                Ok(outputs) => WorkerMsg::Done {
                    task: t.task,
                    outputs,
                },
                Err(message) => WorkerMsg::Failed {
                    task: t.task,
                    message,
                },
            });
        }
        let did = !msgs.is_empty();
        for m in msgs {
            if self.finished.is_some() {
                break;
            }
            self.send(id, m);
        }
        did
    }

    /// Runs the workers round-robin until nothing happens.
    fn run(&mut self) {
        loop {
            let mut ids: Vec<u32> = self.workers.keys().copied().collect();
            ids.sort_unstable();
            let mut any = false;
            for id in ids {
                any |= self.step_worker(id);
            }
            if !any {
                break;
            }
        }
    }

    fn result(&mut self) -> RunResult {
        match self.finished.take() {
            Some(Ok(r)) => r,
            Some(Err(e)) => panic!("the job failed: {e}"),
            None => panic!("the job did not end; log: {:#?}", self.logs),
        }
    }

    fn error(&mut self) -> AgentError {
        match self.finished.take() {
            Some(Err(e)) => e,
            Some(Ok(r)) => panic!("the job succeeded: {r:?}"),
            None => panic!("the job did not end; log: {:#?}", self.logs),
        }
    }
}

fn cfg(expected: usize, window: u32) -> CoreConfig {
    CoreConfig {
        expected_workers: expected,
        sched: SchedConfig::fixed(window),
        trace: true,
        ..CoreConfig::default()
    }
}

pub(crate) fn xs(range: std::ops::Range<i64>) -> Vec<(String, Vec<Value>)> {
    vec![("xs".to_string(), longs(range))]
}

// ------------------------------------------------------------------------------------------

#[test]
fn runs_tasks_on_workers() {
    let b = net("square");
    let mut h = Harness::new(&b, &xs(0..50), cfg(2, 4));
    h.join(0, "w0", &[]);
    h.join(1, "w1", &[]);
    h.run();
    let r = h.result();
    assert_eq!(
        sorted_longs(&r, "ys"),
        (0..50).map(|x| x * x).collect::<Vec<_>>()
    );
    assert_eq!(r.stats.tasks, 50);
    // Both workers got work, and each task went out exactly once.
    let w0 = h.workers[&0].received.len();
    let w1 = h.workers[&1].received.len();
    assert!(w0 > 0 && w1 > 0, "{w0} / {w1}");
    assert_eq!(w0 + w1, 50);
    assert_eq!(h.traces.len(), 50);
    assert!(
        h.traces
            .iter()
            .all(|t| t.outcome == "done" && &*t.name == "square")
    );
    // Each record shows its task's inputs.
    let mut inputs: Vec<String> = h
        .traces
        .iter()
        .filter_map(|t| t.inputs.as_ref().map(|i| i.text()))
        .collect();
    inputs.sort();
    let mut want: Vec<String> = (0..50).map(|x| format!("n = {x}L")).collect();
    want.sort();
    assert_eq!(inputs, want);
    assert!(h.logs.iter().any(|l| l.contains("worker 0 `w0` joined")));
}

#[test]
fn worker_times_place_queued_tasks_back_to_back() {
    // Four tasks sent at once to one worker, which runs them one after the other (100 ms
    // each) and reports when each started (from its receipt) and how long it ran.
    let b = net("square");
    let mut h = Harness::new(&b, &xs(0..4), cfg(1, 4));
    h.core.set_now(Duration::from_millis(10));
    h.join(0, "w0", &[]);
    let tasks: Vec<TaskRun> = h.workers.get_mut(&0).unwrap().queue.drain(..).collect();
    assert_eq!(tasks.len(), 4);
    h.send(
        0,
        WorkerMsg::Log {
            task: tasks[0].task,
            text: "hello\n".into(),
            dropped: 0,
        },
    );
    for (k, t) in tasks.iter().enumerate() {
        let k = k as u64;
        h.core
            .set_now(Duration::from_millis(10 + 100 * (k + 1) + 1));
        let [Value::Long(n)] = t.inputs[..] else {
            panic!("inputs {:?}", t.inputs)
        };
        h.send(
            0,
            WorkerMsg::DoneAt {
                task: t.task,
                outputs: vec![Value::Long(n * n)],
                times: pnet_protocol::TaskTimes {
                    queued_us: 100_000 * k,
                    run_us: 100_000,
                },
            },
        );
    }
    h.result();
    assert_eq!(h.task_logs, vec![(tasks[0].task, "hello\n".to_string())]);
    let spans: Vec<(u128, u128, u128)> = h
        .traces
        .iter()
        .map(|t| {
            (
                t.sent.as_millis(),
                t.started.unwrap().as_millis(),
                t.end.as_millis(),
            )
        })
        .collect();
    assert_eq!(
        spans,
        vec![
            (10, 10, 110),
            (10, 110, 210),
            (10, 210, 310),
            (10, 310, 410)
        ]
    );
    // Never after the answer arrived.
    let (s, e) = task_span(
        Duration::from_millis(5),
        pnet_protocol::TaskTimes {
            queued_us: 10_000,
            run_us: 10_000,
        },
        Duration::from_millis(20),
    );
    assert_eq!((s.as_millis(), e.as_millis()), (15, 20));
}

#[test]
fn places_by_capabilities_and_prefers_the_least_specialised() {
    let b = net("square_requires_a");
    let mut h = Harness::new(&b, &xs(0..3), cfg(3, 1));
    // The joins arrive in one batch, before the first dispatch.
    for (id, name, caps) in [
        (0, "big", vec!["A", "B", "C"]),
        (1, "other", vec!["B"]),
        (2, "small", vec!["A"]),
    ] {
        h.workers.entry(id).or_default();
        h.core.handle(
            Event::Joined {
                worker: id,
                name: name.into(),
                capabilities: caps.iter().map(|c| c.to_string()).collect(),
            },
            &mut h.out,
        );
    }
    h.settle();
    // Window 1: the least specialised fitting worker gets the first task, the big one the
    // second, the one without `A` none.
    assert_eq!(h.workers[&2].received.len(), 1);
    assert_eq!(h.workers[&0].received.len(), 1);
    assert_eq!(h.workers[&1].received.len(), 0);
    let first = h.workers[&2].received[0].0;
    assert!(first < h.workers[&0].received[0].0);
    h.run();
    assert!(h.workers[&1].received.is_empty());
    assert_eq!(sorted_longs(&h.result(), "ys"), vec![0, 1, 4]);
}

#[test]
fn modules_preferences_pick_the_implementation_per_worker() {
    let b = net("square_modules");
    let mut h = Harness::new(&b, &xs(1..9), cfg(2, 2));
    h.answer = Box::new(|def, inputs| match inputs {
        // The gpu implementation answers negated squares, so the results show who ran what.
        [Value::Long(n)] if def.function == "gpu_run" => Ok(vec![Value::Long(-n * n)]),
        [Value::Long(n)] => Ok(vec![Value::Long(n * n)]),
        _ => Err("bad".into()),
    });
    h.join(0, "cpu-only", &["cpu"]);
    h.join(1, "both", &["cpu", "gpu"]);
    h.run();
    let cpu_def = h.defs.iter().find(|d| d.function == "cpu_run").unwrap().id;
    let gpu_def = h.defs.iter().find(|d| d.function == "gpu_run").unwrap().id;
    assert!(h.workers[&0].received.iter().all(|&(_, m)| m == cpu_def));
    assert!(h.workers[&1].received.iter().all(|&(_, m)| m == gpu_def));
    let r = h.result();
    let ys = sorted_longs(&r, "ys");
    assert_eq!(ys.len(), 8);
    assert!(ys.iter().any(|&y| y < 0) && ys.iter().any(|&y| y > 0));
    let mut abs: Vec<i64> = ys.iter().map(|y| y.abs()).collect();
    abs.sort_unstable();
    assert_eq!(abs, (1..9).map(|x| x * x).collect::<Vec<_>>());
}

#[test]
fn a_lost_worker_s_tasks_run_elsewhere_once() {
    let b = net("square");
    let mut h = Harness::new(&b, &xs(0..40), cfg(2, 4));
    h.join(0, "w0", &[]);
    h.join(1, "w1", &[]);
    h.step_worker(0);
    h.step_worker(0);
    let held: Vec<u64> = h.workers[&0].queue.iter().map(|t| t.task).collect();
    assert_eq!(held.len(), 4, "its window was refilled");
    h.event(Event::Lost {
        worker: 0,
        reason: "connection closed".into(),
        exit: None,
    });
    assert!(
        h.logs
            .iter()
            .any(|l| l.contains("`w0` lost: connection closed; 4 tasks queued again"))
    );
    // Late answers of the lost worker are ignored.
    let late = h.workers.get_mut(&0).unwrap().queue.pop_front().unwrap();
    h.send(
        0,
        WorkerMsg::Done {
            task: late.task,
            outputs: vec![Value::Long(-1)],
        },
    );
    h.workers.remove(&0);
    h.run();
    let r = h.result();
    assert_eq!(
        sorted_longs(&r, "ys"),
        (0..40).map(|x| x * x).collect::<Vec<_>>()
    );
    assert!(
        held.iter()
            .all(|t| h.workers[&1].received.iter().any(|(x, _)| x == t))
    );
}

#[test]
fn tasks_a_worker_gives_back_on_its_own_run_again_with_their_inputs() {
    // As a leaf agent left without workers does: Cancelled for tasks it was not asked to
    // cancel. They are queued again with their inputs (the task record of the give-back,
    // with tracing on, does not take them).
    let b = net("square");
    let mut h = Harness::new(&b, &xs(0..12), cfg(2, 4));
    h.join(0, "w0", &[]);
    h.join(1, "w1", &[]);
    let held: Vec<u64> = (h.workers.get_mut(&0).unwrap().queue.drain(..))
        .map(|t| t.task)
        .collect();
    assert_eq!(held.len(), 4);
    for &task in &held {
        h.send(0, WorkerMsg::Cancelled { task });
    }
    assert!(
        h.logs
            .iter()
            .any(|l| l.contains("was cancelled by worker 0 on its own; queued again"))
    );
    h.run();
    let r = h.result();
    assert_eq!(
        sorted_longs(&r, "ys"),
        (0..12).map(|x| x * x).collect::<Vec<_>>()
    );
}

#[test]
fn retry_limit_from_the_config() {
    let b = net("square");
    let mut c = cfg(3, 1);
    c.max_retries = Some(1);
    let mut h = Harness::new(&b, &xs(5..6), c);
    h.join(0, "w0", &[]);
    h.event(Event::Lost {
        worker: 0,
        reason: "killed".into(),
        exit: None,
    });
    assert!(h.finished.is_none(), "one retry is allowed");
    h.join(1, "w1", &[]);
    assert_eq!(h.workers[&1].received.len(), 1);
    h.event(Event::Lost {
        worker: 1,
        reason: "killed again".into(),
        exit: None,
    });
    let e = h.error().to_string();
    assert!(e.starts_with("in transition `square` (test.xpnet:2:3): module call `arith` failed: worker `w1` was lost while running it (killed again); it ran 2 times, more than fhg.drts.schedule.maximum_number_of_retries = 1 allows"), "{e}");
}

#[test]
fn a_crash_is_named_with_its_signal_module_and_transition() {
    let b = net("square");
    let mut c = cfg(1, 1);
    c.max_retries = Some(0);
    let mut h = Harness::new(&b, &xs(5..6), c);
    h.join(0, "w0", &[]);
    h.event(Event::Lost {
        worker: 0,
        reason: "connection closed".into(),
        exit: Some("SIGSEGV".into()),
    });
    let e = h.error().to_string();
    assert!(
        e.contains(
            "module `arith.square` crashed with SIGSEGV on worker `w0` (task 0, transition \
             `square` at test.xpnet:2:3); inputs: n = 5L; it ran 1 times, more than \
             fhg.drts.schedule.maximum_number_of_retries = 0 allows"
        ),
        "{e}"
    );
}

#[test]
fn without_workers_a_job_waits_for_restarts_then_names_the_losses() {
    let b = net("square");
    let mut h = Harness::new(&b, &xs(5..6), cfg(1, 1));
    h.join(0, "w0", &[]);
    h.core.set_workers_coming(1);
    h.event(Event::Lost {
        worker: 0,
        reason: "connection closed".into(),
        exit: Some("SIGABRT".into()),
    });
    assert!(h.finished.is_none(), "a restart is coming");
    let waiting = h.core.status().waiting.expect("says what it waits for");
    assert!(
        waiting.starts_with("transition `square` waits for a worker with nothing: 1 such worker(s) lost, the last: module `arith.square` crashed with SIGABRT"),
        "{waiting}"
    );
    assert!(waiting.ends_with("; 1 worker(s) restarting"), "{waiting}");
    // The restart failed: the job fails, naming what happened instead of "no worker joined".
    h.core.set_workers_coming(0);
    h.settle();
    let e = h.error().to_string();
    assert!(
        e.contains("no worker is left to run this module call: it needs nothing; every worker that joined was lost: module `arith.square` crashed with SIGABRT on worker `w0`"),
        "{e}"
    );
}

#[test]
fn a_call_that_crashes_every_worker_is_named_once_with_its_inputs_and_count() {
    let b = net("square");
    let mut h = Harness::new(&b, &xs(5..6), cfg(1, 1));
    for (id, name) in [(0, "w0"), (1, "w1"), (2, "w0")] {
        h.join(id, name, &[]);
        h.core.set_workers_coming(usize::from(id < 2));
        h.event(Event::Lost {
            worker: id,
            reason: "connection closed".into(),
            exit: Some("SIGSEGV".into()),
        });
        assert!(h.finished.is_none() || id == 2, "a restart is coming");
    }
    h.settle();
    let e = h.error().to_string();
    assert!(
        e.contains(
            "no worker is left to run this module call: it needs nothing; every worker that \
             joined was lost: module `arith.square` crashed with SIGSEGV 3 times, on worker(s) \
             `w0`, `w1` (task 0, transition `square` at test.xpnet:2:3; inputs: n = 5L); \
             every worker that could run this call ended on it, each restart included, so \
             none is left to try it again"
        ),
        "{e}"
    );
    assert_eq!(e.matches("SIGSEGV").count(), 1, "{e}");
}

#[test]
fn a_module_that_exits_with_status_0_during_a_call_is_not_called_a_crash() {
    let b = net("square");
    let mut c = cfg(1, 1);
    c.max_retries = Some(0);
    let mut h = Harness::new(&b, &xs(5..6), c);
    h.join(0, "w0", &[]);
    h.event(Event::Lost {
        worker: 0,
        reason: "connection closed".into(),
        exit: Some("exit status 0".into()),
    });
    let e = h.error().to_string();
    assert!(
        e.contains(
            "module `arith.square` ended its worker process (exit status 0) during the call on \
             worker `w0` (task 0, transition `square` at test.xpnet:2:3)"
        ),
        "{e}"
    );
    assert!(!e.contains("crashed"), "{e}");
}

#[test]
fn a_late_worker_steals_queued_tasks_through_the_core() {
    let b = net("square");
    let mut h = Harness::new(&b, &xs(0..6), cfg(2, 3));
    h.join(0, "w0", &[]);
    assert_eq!(h.workers[&0].queue.len(), 3);
    h.join(1, "w1", &[]);
    // w1 got its own window from the queue; nothing left to steal yet.
    assert_eq!(h.workers[&1].queue.len(), 3);
    // w1 runs all of its tasks while w0 is stuck on its first one: w1 idles and steals.
    for _ in 0..3 {
        h.step_worker(1);
    }
    assert!(
        h.logs
            .iter()
            .any(|l| l.starts_with("stealing task(s) [2] from worker 0")),
        "{:#?}",
        h.logs
    );
    h.step_worker(0);
    assert_eq!(
        h.workers[&1]
            .received
            .iter()
            .filter(|(t, _)| *t == 2)
            .count(),
        1,
        "the stolen task went to the idle worker"
    );
    h.run();
    let r = h.result();
    assert_eq!(
        sorted_longs(&r, "ys"),
        (0..6).map(|x| x * x).collect::<Vec<_>>()
    );
    // Six results (none doubled); seven receptions: the stolen task was sent twice.
    let sent: usize = h.workers.values().map(|w| w.received.len()).sum();
    assert_eq!(sent, 7);
}

#[test]
fn retry_limit_from_the_net_property() {
    let b = net("square_max_retries_0");
    let mut h = Harness::new(&b, &xs(5..6), cfg(2, 1));
    h.join(0, "w0", &[]);
    h.event(Event::Lost {
        worker: 0,
        reason: "gone".into(),
        exit: None,
    });
    let e = h.error().to_string();
    assert!(e.contains("maximum_number_of_retries = 0"), "{e}");
    // A property that is not a number is an error naming the transition.
    let b = net("square_max_retries_many");
    let mut h = Harness::new(&b, &xs(5..6), cfg(1, 1));
    h.join(0, "w0", &[]);
    let e = h.error().to_string();
    assert!(
        e.contains("in transition `square`") && e.contains("\"many\" is not a number"),
        "{e}"
    );
}

#[test]
fn eureka_cancels_queued_and_running_tasks() {
    let b = net("eureka");
    let mut h = Harness::new(&b, &xs(1..6), cfg(1, 2));
    h.join(0, "w0", &[]);
    assert_eq!(h.workers[&0].received.len(), 2);
    let second = h.workers[&0].received[1].0;
    // The first task finds something: the group is cancelled.
    h.step_worker(0);
    assert_eq!(
        h.workers[&0].cancels,
        vec![second],
        "the running sibling is cancelled"
    );
    assert!(
        h.logs
            .iter()
            .any(|l| l.contains("eureka g: 3 queued and 1 running tasks cancelled")),
        "{:#?}",
        h.logs
    );
    assert!(h.finished.is_none(), "waits for the cancelled task");
    h.step_worker(0); // answers Cancelled
    let r = h.result();
    assert_eq!(sorted_longs(&r, "hits").len(), 1);
    assert_eq!(
        h.workers[&0].received.len(),
        2,
        "the queued ones never went out"
    );
    assert!(
        h.traces
            .iter()
            .any(|t| t.outcome == "cancelled" && t.task == second)
    );
}

#[test]
fn eureka_discards_a_result_that_overtakes_the_cancel() {
    let b = net("eureka");
    let mut h = Harness::new(&b, &xs(1..3), cfg(1, 2));
    h.join(0, "w0", &[]);
    let tasks: Vec<u64> = h.workers[&0].received.iter().map(|r| r.0).collect();
    // Both results come back before the worker sees the Cancel.
    let w = h.workers.get_mut(&0).unwrap();
    let runs: Vec<TaskRun> = w.queue.drain(..).collect();
    for t in runs {
        let n = match t.inputs[..] {
            [Value::Long(n)] => n,
            _ => unreachable!(),
        };
        h.send(
            0,
            WorkerMsg::Done {
                task: t.task,
                outputs: vec![Value::Long(n)],
            },
        );
    }
    assert_eq!(h.workers[&0].cancels, vec![tasks[1]]);
    let r = h.result();
    assert_eq!(
        sorted_longs(&r, "hits").len(),
        1,
        "the overtaking result was discarded"
    );
}

#[test]
fn a_failing_module_fails_the_job_and_cancels_siblings() {
    let b = net("square");
    let mut h = Harness::new(&b, &xs(0..6), cfg(2, 2));
    h.answer = Box::new(|_, _| Err("division by zero".into()));
    h.join(0, "w0", &[]);
    h.join(1, "w1", &[]);
    h.step_worker(0);
    let e = h.error();
    assert_eq!(e.code(), "agent-job-failed");
    assert_eq!(
        e.to_string(),
        "in transition `square` (test.xpnet:2:3): module call `arith` failed: division by zero"
    );
    // The three other tasks in flight are cancelled.
    let cancels = h.workers[&0].cancels.len() + h.workers[&1].cancels.len();
    assert_eq!(cancels, 3);
}

#[test]
fn wrong_number_of_outputs_fails_the_task() {
    let b = net("square");
    let mut h = Harness::new(&b, &xs(0..1), cfg(1, 2));
    h.answer = Box::new(|_, _| Ok(vec![]));
    h.join(0, "w0", &[]);
    h.run();
    let e = h.error().to_string();
    assert!(
        e.contains("worker `w0` sent 0 output values, expected 1 (r)"),
        "{e}"
    );
}

#[test]
fn a_task_no_worker_fits_fails_once_the_workers_joined() {
    let b = net("square_requires_gpu");
    let mut h = Harness::new(&b, &xs(0..2), cfg(2, 2));
    h.join(0, "cpu0", &["CPU", "fast"]);
    assert!(h.finished.is_none(), "another worker may still join");
    h.event(Event::JoinTimeout);
    let e = h.error();
    assert_eq!(e.code(), "agent-no-worker");
    assert_eq!(
        e.to_string(),
        "in transition `square` (test.xpnet:2:3): no worker can run this module call: it needs the capabilities `GPU`; the workers have: `cpu0` [CPU, fast]"
    );
    // Without any worker planned, the first task fails at once.
    let mut h = Harness::new(&b, &xs(0..2), cfg(0, 2));
    h.settle();
    assert!(h.error().to_string().ends_with("no workers were started"));
}

#[test]
fn wait_for_output_and_put_token() {
    let b = net("square_wait_for_output");
    // Without a control socket nothing could ever put the token.
    let mut h = Harness::new(&b, &[], cfg(1, 2));
    h.join(0, "w0", &[]);
    let e = h.error();
    assert_eq!(e.code(), "agent-stuck");
    assert!(e.to_string().contains("pass --control SOCKET"), "{e}");
    // With one, the job waits for the token.
    let mut c = cfg(1, 2);
    c.control = true;
    let mut h = Harness::new(&b, &[], c);
    h.join(0, "w0", &[]);
    h.run();
    assert!(h.finished.is_none());
    h.event(Event::ClientOpened { client: 7 });
    h.event(Event::Control {
        client: 7,
        request: Request::Status,
    });
    let Some((7, Response::Status(s))) = h.replies.pop() else {
        panic!("no status: {:?}", h.replies)
    };
    assert_eq!((s.workers.len(), s.tasks_running, s.tasks_done), (1, 0, 0));
    h.event(Event::Control {
        client: 7,
        request: Request::PutToken {
            place: "nope".into(),
            value: Value::Long(1),
        },
    });
    assert_eq!(
        h.replies.pop(),
        Some((
            7,
            Response::Error(
                "bad input: no put_token place `nope` (the root net's put_token places: xs (long))"
                    .into()
            )
        ))
    );
    h.event(Event::Control {
        client: 7,
        request: Request::PutToken {
            place: "xs".into(),
            value: Value::Long(7),
        },
    });
    assert_eq!(h.replies.pop(), Some((7, Response::Ok)));
    h.run();
    assert_eq!(sorted_longs(&h.result(), "ys"), vec![49]);
}

#[test]
fn workflow_response_is_answered() {
    let b = net("response");
    let mut c = cfg(0, 1);
    c.control = true;
    let mut h = Harness::new(&b, &[], c);
    // With a control socket, a net with put_token places waits for its clients.
    h.settle();
    assert!(h.finished.is_none());
    h.event(Event::Control {
        client: 1,
        request: Request::WorkflowResponse {
            place: "req".into(),
            value: Value::Long(41),
        },
    });
    assert_eq!(h.replies, vec![(1, Response::Value(Value::Long(42)))]);
    assert!(h.finished.is_none());
    h.event(Event::Control {
        client: 1,
        request: Request::Close,
    });
    assert_eq!(h.replies[1], (1, Response::Ok));
    assert!(h.result().outputs.is_empty());
}

#[test]
fn a_pending_workflow_response_gets_the_job_s_error() {
    let b = net("response");
    let mut c = cfg(0, 1);
    c.control = true;
    let mut h = Harness::new(&b, &[], c);
    h.event(Event::ClientOpened { client: 1 });
    h.event(Event::ClientOpened { client: 2 });
    // The place exists but takes the request: make the answer wait by cancelling first.
    h.core.handle(
        Event::Control {
            client: 1,
            request: Request::WorkflowResponse {
                place: "req".into(),
                value: Value::Long(1),
            },
        },
        &mut h.out,
    );
    h.core.handle(
        Event::Control {
            client: 2,
            request: Request::Cancel,
        },
        &mut h.out,
    );
    h.drain();
    assert_eq!(h.replies[0], (2, Response::Ok));
    assert_eq!(
        h.replies[1],
        (1, Response::Error("the job was cancelled".into()))
    );
    assert_eq!(h.error().exit_code(), 130);
}

#[test]
fn cancel_event_cancels_running_tasks() {
    let b = net("square");
    let mut h = Harness::new(&b, &xs(0..4), cfg(1, 2));
    h.join(0, "w0", &[]);
    h.event(Event::Cancel);
    assert!(matches!(h.error(), AgentError::Cancelled));
    assert_eq!(h.workers[&0].cancels.len(), 2);
}

#[test]
fn queue_stays_bounded_and_tokens_are_not_lost() {
    let b = net("square");
    let mut c = cfg(1, 8);
    c.high_water = 16;
    c.trace = false;
    let mut h = Harness::new(&b, &xs(0..3000), c);
    h.join(0, "w0", &[]);
    let mut max_queued = 0;
    while h.finished.is_none() {
        max_queued = max_queued.max(h.core.sched().queued());
        assert!(h.step_worker(0));
    }
    assert!(max_queued <= 16, "{max_queued}");
    let r = h.result();
    assert_eq!(
        sorted_longs(&r, "ys"),
        (0..3000).map(|x| x * x).collect::<Vec<_>>()
    );
    assert!(h.traces.is_empty());
}

#[test]
fn control_after_the_end_is_answered() {
    let b = net("square");
    let mut h = Harness::new(&b, &xs(0..1), cfg(1, 1));
    h.join(0, "w0", &[]);
    h.run();
    assert!(h.result().outputs[0].1.len() == 1);
    h.core.handle(
        Event::Control {
            client: 3,
            request: Request::Status,
        },
        &mut h.out,
    );
    h.drain();
    assert_eq!(
        h.replies,
        vec![(3, Response::Error("the job has ended".into()))]
    );
}

pub(crate) mod memory_tests;

#[test]
fn a_task_record_cuts_long_inputs() {
    // The square net on strings (the fake worker's answer does not matter here).
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/square.ir");
    let text = std::fs::read_to_string(path)
        .unwrap()
        .replace(": long", ": string");
    let b = pnet_bundle::text::parse(&text).unwrap();
    let long = Value::string("x".repeat(5000).as_str());
    let mut h = Harness::new(&b, &[("xs".to_string(), vec![long])], cfg(1, 1));
    h.join(0, "w0", &[]);
    h.run();
    let inputs = h.traces[0].inputs.as_ref().unwrap().text();
    assert!(inputs.starts_with("n = \"xxx"), "{inputs}");
    assert!(inputs.ends_with("..."), "{inputs}");
    assert!(
        inputs.len() <= crate::control::MAX_INPUTS_TEXT + 3,
        "{}",
        inputs.len()
    );
}

#[test]
fn a_leaf_is_one_worker_of_its_capacity_whose_batches_and_retries_count() {
    let b = net("square");
    let mut c = cfg(1, 1);
    c.max_retries = Some(1);
    let mut h = Harness::new(&b, &xs(0..20), c);
    h.join(0, "leaf", &[]);
    // Until it says its capacity it is a worker (the window of the config: 1 task); its
    // capacity then is its window: 0 places nothing more, 8 fills it at once.
    assert_eq!(h.workers[&0].received.len(), 1);
    h.send(0, WorkerMsg::Capacity { capacity: 0 });
    assert_eq!(h.workers[&0].received.len(), 1);
    h.send(0, WorkerMsg::Capacity { capacity: 8 });
    assert_eq!(h.workers[&0].received.len(), 8);
    // Answers come up in one batch; the window stays the capacity.
    let done: Vec<WorkerMsg> = (0..3)
        .map(|_| {
            let t = h.workers.get_mut(&0).unwrap().queue.pop_front().unwrap();
            let outputs = square_answer(&h.defs[t.module as usize], &t.inputs).unwrap();
            WorkerMsg::Done {
                task: t.task,
                outputs,
            }
        })
        .collect();
    h.send(0, WorkerMsg::Batch(done));
    assert_eq!(h.workers[&0].received.len(), 11);
    assert_eq!(h.workers[&0].queue.len(), 8);
    // The leaf lost the worker running a task twice: the second retry passes the limit.
    let t = h.workers[&0].queue[0].task;
    h.send(0, WorkerMsg::Retried { task: t });
    assert!(h.finished.is_none(), "one retry is allowed");
    h.send(0, WorkerMsg::Retried { task: t });
    let e = h.error().to_string();
    assert!(
        e.contains("a worker of leaf `leaf` was lost while running it; it ran 2 times, more than fhg.drts.schedule.maximum_number_of_retries = 1 allows"),
        "{e}"
    );
}

#[test]
fn a_job_whose_only_leaf_has_no_workers_left_says_so_while_it_waits() {
    let b = net("square");
    let mut h = Harness::new(&b, &xs(0..4), cfg(1, 1));
    h.join(0, "leafA", &[]);
    h.send(0, WorkerMsg::Capacity { capacity: 8 });
    assert_eq!(h.core.status().waiting, None);
    // Its workers all crashed and were not restarted: capacity 0, its tasks given back.
    h.send(0, WorkerMsg::Capacity { capacity: 0 });
    let held: Vec<u64> = h.workers[&0].queue.iter().map(|t| t.task).collect();
    h.workers.get_mut(&0).unwrap().queue.clear();
    for task in held {
        h.send(0, WorkerMsg::Cancelled { task });
    }
    let waiting = h.core.status().waiting.expect("says what it waits for");
    assert_eq!(
        waiting,
        "transition `square` waits for a worker with nothing; the leaf agents that fit \
         (`leafA`) have no workers left (see their standard error); start new leaves or \
         `gspc add-workers`"
    );
    assert!(h.finished.is_none(), "the leaf may get workers again");
    h.send(0, WorkerMsg::Capacity { capacity: 8 });
    assert_eq!(h.core.status().waiting, None);
}

#[test]
fn a_job_without_any_worker_says_how_to_get_some_while_it_waits() {
    let b = net("square");
    let mut c = cfg(0, 1);
    c.wait_for_workers = true;
    let mut h = Harness::new(&b, &xs(0..2), c);
    h.settle();
    assert!(h.finished.is_none(), "it waits for workers");
    assert_eq!(
        h.core.status().waiting.as_deref(),
        Some(
            "transition `square` waits for a worker with nothing; no worker is connected: \
             start leaf agents (`gspc-leaf`) or add workers (`gspc add-workers`)"
        )
    );
    h.join(0, "w0", &[]);
    assert_eq!(h.core.status().waiting, None);
}
