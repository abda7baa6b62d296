//! Pure tests of the hub: several jobs over fake workers (answers computed here).

use std::collections::HashMap;
use std::time::Duration;

use pnet_memory::SegmentInfo;
use pnet_protocol::{AgentMsg, Hello, Secret, TaskRun, WorkerMsg};
use pnet_stdlib::Value;

use super::*;
use crate::core::tests::{net, xs};
use crate::sched::SchedConfig;

fn hub(window: u32) -> Hub {
    Hub::new(
        HubConfig {
            run: RunConfig::default(),
            core: CoreConfig {
                control: true,
                wait_for_workers: true,
                sched: SchedConfig::fixed(window),
                ..CoreConfig::default()
            },
            job_prefix: true,
            keep_ended: 100,
            forget_modules: true,
        },
        1,
    )
}

/// [`hub`] with a window of 1 that keeps task traces.
fn traced_hub() -> Hub {
    let mut cfg = hub(1).cfg;
    cfg.core.trace = true;
    Hub::new(cfg, 1)
}

fn hello(name: &str, caps: &[&str]) -> Hello {
    Hello {
        protocol: pnet_protocol::PROTOCOL_VERSION,
        secret: Secret::from_hex(&"00".repeat(32)).unwrap(),
        name: name.into(),
        host: "localhost".into(),
        pid: 1,
        capabilities: caps.iter().map(|c| c.to_string()).collect(),
        socket: None,
    }
}

/// What the fake workers hold: per worker, the tasks sent and not answered, in order.
#[derive(Default)]
struct Fakes {
    queues: HashMap<u32, Vec<TaskRun>>,
    /// Module definitions each worker was told about (global id -> function).
    defs: HashMap<u32, HashMap<u32, String>>,
    ended: Vec<(JobId, JobOutcome)>,
    replies: Vec<(u64, ClientReply)>,
}

impl Fakes {
    fn take(&mut self, out: &mut Vec<HubCmd>) {
        for c in out.drain(..) {
            match c {
                HubCmd::Send { worker, msg } => match msg {
                    AgentMsg::Run(runs) => {
                        for r in &runs {
                            assert!(
                                self.defs
                                    .get(&worker)
                                    .is_some_and(|d| d.contains_key(&r.module)),
                                "task {} names module {} before worker {worker} knew it",
                                r.task,
                                r.module
                            );
                        }
                        self.queues.entry(worker).or_default().extend(runs)
                    }
                    AgentMsg::Modules { modules } => {
                        let d = self.defs.entry(worker).or_default();
                        for m in modules {
                            d.insert(m.id, m.function);
                        }
                    }
                    AgentMsg::ForgetModules { ids } => {
                        if let Some(d) = self.defs.get_mut(&worker) {
                            for id in ids {
                                d.remove(&id);
                            }
                        }
                    }
                    AgentMsg::Cancel { task } => {
                        if let Some(q) = self.queues.get_mut(&worker) {
                            q.retain(|t| t.task != task);
                        }
                    }
                    _ => {}
                },
                HubCmd::Ended { job, result } => {
                    self.ended.push((job, outcome_of(&result, Vec::new())))
                }
                HubCmd::Reply { client, reply } => self.replies.push((client, reply)),
                HubCmd::Log(_) | HubCmd::Trace(_) | HubCmd::TaskLog { .. } => {}
            }
        }
    }

    /// The worker answers its oldest task (squares its input).
    fn answer_one(&mut self, h: &mut Hub, worker: u32, out: &mut Vec<HubCmd>) -> Option<u64> {
        let q = self.queues.get_mut(&worker)?;
        if q.is_empty() {
            return None;
        }
        let t = q.remove(0);
        let outputs = match t.inputs[..] {
            [Value::Long(n)] => vec![Value::Long(n * n)],
            _ => vec![Value::Control],
        };
        h.worker_msgs(
            worker,
            vec![WorkerMsg::Done {
                task: t.task,
                outputs,
            }],
            out,
        );
        Some(t.task)
    }
}

fn settle(h: &mut Hub, f: &mut Fakes, out: &mut Vec<HubCmd>) {
    for _ in 0..1000 {
        let more = h.pump(out);
        f.take(out);
        if !more {
            break;
        }
    }
}

fn squares(outcome: &JobOutcome) -> Vec<i64> {
    let JobOutcome::Done { outputs, .. } = outcome else {
        panic!("job did not end well: {outcome:?}");
    };
    let mut v: Vec<i64> = outputs
        .iter()
        .find(|(p, _)| p == "ys")
        .map(|(_, vs)| {
            vs.iter()
                .map(|v| match v {
                    Value::Long(n) => *n,
                    other => panic!("not a long: {other:?}"),
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort_unstable();
    v
}

#[test]
fn a_job_keeps_its_tasks_logs_name_and_error() {
    let mut h = Hub::new(
        HubConfig {
            run: RunConfig::default(),
            core: CoreConfig {
                control: true,
                wait_for_workers: true,
                sched: SchedConfig::fixed(2),
                trace: true,
                ..CoreConfig::default()
            },
            job_prefix: true,
            keep_ended: 100,
            forget_modules: true,
        },
        1,
    );
    let mut f = Fakes::default();
    let mut out = Vec::new();
    h.worker_joined(0, &hello("w0", &[]), 0, &mut out);
    let a = h
        .add_job("a.pnet", net("square"), &xs(0..3), &mut out)
        .unwrap();
    h.name_job(a, "first".into());
    settle(&mut h, &mut f, &mut out);
    // Two sent (window 2): the older one runs, the other waits in the worker's queue.
    let t = h.tasks(a).unwrap();
    let states: Vec<&str> = t.tasks.iter().map(|t| t.state.as_str()).collect();
    assert_eq!(states, vec!["running", "sent"]);
    assert_eq!(t.queued, 1);
    let st = h.job_status(a).unwrap();
    assert_eq!(
        (st.tasks_running, st.tasks_sent, st.tasks_queued),
        (1, 1, 1)
    );
    let first = f.queues[&0][0].task;
    h.worker_msgs(
        0,
        vec![WorkerMsg::Log {
            task: first,
            text: "said something\n".into(),
            dropped: 0,
        }],
        &mut out,
    );
    while f.answer_one(&mut h, 0, &mut out).is_some() {
        settle(&mut h, &mut f, &mut out);
    }
    let t = h.tasks(a).unwrap();
    assert_eq!(t.tasks.len(), 3);
    assert!(
        t.tasks
            .iter()
            .all(|t| t.state == "done" && t.worker == "w0")
    );
    assert_eq!(t.tasks[0].log_bytes, 15);
    assert_eq!(t.workers, vec![(0, "w0".to_string())]);
    let logs = h.logs(a, Some(split_task(first).1)).unwrap();
    assert_eq!(logs.len(), 1);
    assert_eq!(logs[0].text, "said something\n");
    assert_eq!(logs[0].transition, "square");
    let j = &h.jobs()[0];
    assert_eq!(
        (j.name.as_deref(), j.state.as_str()),
        (Some("first"), "done")
    );

    // A failing task: its error in the task list and in the job's summary.
    let b = h
        .add_job("b.pnet", net("square"), &xs(0..1), &mut out)
        .unwrap();
    settle(&mut h, &mut f, &mut out);
    let t = f.queues.get_mut(&0).unwrap().remove(0);
    h.worker_msgs(
        0,
        vec![WorkerMsg::FailedAt {
            task: t.task,
            message: "no squares today".into(),
            times: pnet_protocol::TaskTimes::default(),
        }],
        &mut out,
    );
    settle(&mut h, &mut f, &mut out);
    let t = h.tasks(b).unwrap();
    assert_eq!(t.tasks[0].state, "failed");
    assert_eq!(t.tasks[0].error.as_deref(), Some("no squares today"));
    let j = h.jobs().into_iter().find(|j| j.id == b).unwrap();
    assert_eq!(j.state, "failed");
    assert!(j.error.unwrap().contains("no squares today"));
}

#[test]
fn only_the_last_ended_jobs_keep_their_tasks() {
    let mut h = traced_hub();
    let mut f = Fakes::default();
    let mut out = Vec::new();
    h.worker_joined(0, &hello("w0", &[]), 0, &mut out);
    let n = KEEP_TASK_BOOKS as u64 + 3;
    for _ in 0..n {
        h.add_job("a", net("square"), &xs(0..1), &mut out).unwrap();
        settle(&mut h, &mut f, &mut out);
        while f.answer_one(&mut h, 0, &mut out).is_some() {
            settle(&mut h, &mut f, &mut out);
        }
    }
    let kept = |job: JobId| h.tasks(job).unwrap().tasks.len();
    assert_eq!((kept(1), kept(3), kept(4), kept(n)), (0, 0, 1, 1));
    assert_eq!(h.jobs().len() as u64, n, "the jobs themselves stay listed");
}

#[test]
fn task_ids_carry_their_job() {
    assert_eq!(split_task(global_task(7, 12345)), (7, 12345));
    assert_eq!(split_task(global_task(0, 5)), (0, 5));
    assert_ne!(global_task(1, 1), global_task(2, 1));
}

#[test]
fn a_job_prefers_workers_not_busy_with_another_job() {
    let mut h = hub(2);
    let mut f = Fakes::default();
    let mut out = Vec::new();
    h.worker_joined(0, &hello("w0", &[]), 0, &mut out);
    h.worker_joined(1, &hello("w1", &[]), 0, &mut out);
    let a = h.add_job("a", net("square"), &xs(0..1), &mut out).unwrap();
    settle(&mut h, &mut f, &mut out);
    assert_eq!(f.queues[&0].len(), 1, "job a's task on the first worker");
    let b = h.add_job("b", net("square"), &xs(5..6), &mut out).unwrap();
    settle(&mut h, &mut f, &mut out);
    let on = |w: u32, f: &Fakes| -> Vec<JobId> {
        f.queues
            .get(&w)
            .map(|q| q.iter().map(|t| split_task(t.task).0).collect())
            .unwrap_or_default()
    };
    assert_eq!(on(0, &f), vec![a]);
    assert_eq!(on(1, &f), vec![b], "not queued behind job a's task");
}

#[test]
fn two_jobs_share_one_worker_fairly_and_both_finish() {
    let mut h = hub(2);
    let mut f = Fakes::default();
    let mut out = Vec::new();
    h.worker_joined(0, &hello("w0", &[]), 0, &mut out);
    let a = h.add_job("a", net("square"), &xs(0..40), &mut out).unwrap();
    let b = h
        .add_job("b", net("square"), &xs(100..110), &mut out)
        .unwrap();
    assert_eq!((a, b), (1, 2));
    settle(&mut h, &mut f, &mut out);
    // Each job has its window (2) on the worker.
    let held: Vec<JobId> = f.queues[&0].iter().map(|t| split_task(t.task).0).collect();
    assert_eq!(held.iter().filter(|&&j| j == a).count(), 2, "{held:?}");
    assert_eq!(held.iter().filter(|&&j| j == b).count(), 2, "{held:?}");
    // The worker answers in order: while both jobs have work, they alternate closely.
    let mut order = Vec::new();
    while let Some(t) = f.answer_one(&mut h, 0, &mut out) {
        order.push(split_task(t).0);
        settle(&mut h, &mut f, &mut out);
    }
    let first20 = &order[..20];
    let b_in_first20 = first20.iter().filter(|&&j| j == b).count();
    assert!(
        (8..=12).contains(&b_in_first20),
        "job b got {b_in_first20} of the first 20 tasks: {order:?}"
    );
    assert_eq!(order.len(), 50);
    let ended: HashMap<JobId, JobOutcome> = f.ended.iter().cloned().collect();
    assert_eq!(
        squares(&ended[&a]),
        (0..40).map(|x| x * x).collect::<Vec<_>>()
    );
    assert_eq!(
        squares(&ended[&b]),
        (100..110).map(|x| x * x).collect::<Vec<_>>()
    );
    // Ended jobs' modules are forgotten; their records stay for `wait` and `jobs`.
    assert!(f.defs[&0].is_empty(), "{:?}", f.defs[&0]);
    let jobs = h.jobs();
    assert_eq!(jobs.len(), 2);
    assert!(jobs.iter().all(|j| j.state == "done"), "{jobs:?}");
    assert_eq!(jobs[0].tasks_done, 40);
    h.wait_for(a, 9, &mut out).unwrap();
    f.take(&mut out);
    assert!(matches!(
        f.replies.last(),
        Some((9, ClientReply::Outcome { job: 1, .. }))
    ));
    assert!(h.wait_for(77, 9, &mut out).is_err());
}

#[test]
fn a_task_waits_for_a_fitting_worker_and_a_late_worker_learns_the_modules() {
    let mut h = hub(4);
    let mut f = Fakes::default();
    let mut out = Vec::new();
    h.worker_joined(0, &hello("cpu", &["CPU"]), 0, &mut out);
    let j = h
        .add_job("gpu", net("square_requires_gpu"), &xs(0..3), &mut out)
        .unwrap();
    settle(&mut h, &mut f, &mut out);
    h.set_now(Duration::from_secs(5));
    settle(&mut h, &mut f, &mut out);
    // Nothing fits: the job waits instead of failing.
    assert!(f.ended.is_empty());
    assert!(f.queues.get(&0).is_none_or(|q| q.is_empty()));
    assert_eq!(h.jobs()[0].tasks_queued, 3);
    // A worker welcomed before the job was submitted (defs_upto 0) gets its modules late.
    h.worker_joined(1, &hello("gpu", &["GPU"]), 0, &mut out);
    settle(&mut h, &mut f, &mut out);
    assert_eq!(f.queues[&1].len(), 3);
    while f.answer_one(&mut h, 1, &mut out).is_some() {
        settle(&mut h, &mut f, &mut out);
    }
    assert_eq!(f.ended.len(), 1);
    assert_eq!(f.ended[0].0, j);
    assert_eq!(squares(&f.ended[0].1), vec![0, 1, 4]);
}

#[test]
fn a_removed_worker_s_tasks_run_on_another_and_cancel_ends_one_job() {
    let mut h = hub(8);
    let mut f = Fakes::default();
    let mut out = Vec::new();
    h.worker_joined(0, &hello("w0", &[]), 0, &mut out);
    let a = h.add_job("a", net("square"), &xs(0..4), &mut out).unwrap();
    let b = h.add_job("b", net("square"), &xs(0..4), &mut out).unwrap();
    settle(&mut h, &mut f, &mut out);
    assert_eq!(f.queues[&0].len(), 8);
    assert!(h.cancel_job(b, &mut out));
    f.take(&mut out);
    assert_eq!(f.ended, vec![(b, JobOutcome::Cancelled)]);
    assert_eq!(
        f.queues[&0].len(),
        4,
        "b's tasks were cancelled on the worker"
    );
    assert!(!h.cancel_job(b, &mut out));
    // Remove w0 while it holds a's tasks; they go to w1.
    h.worker_joined(1, &hello("w1", &[]), 0, &mut out);
    h.worker_lost(0, "removed", None, &mut out);
    f.queues.remove(&0);
    settle(&mut h, &mut f, &mut out);
    assert_eq!(f.queues[&1].len(), 4);
    // A late answer from the removed worker is ignored.
    h.worker_msgs(
        0,
        vec![WorkerMsg::Done {
            task: global_task(a, 0),
            outputs: vec![Value::Long(0)],
        }],
        &mut out,
    );
    while f.answer_one(&mut h, 1, &mut out).is_some() {
        settle(&mut h, &mut f, &mut out);
    }
    assert_eq!(f.ended.len(), 2);
    assert_eq!(squares(&f.ended[1].1), vec![0, 1, 4, 9]);
    let running = h.worker_status();
    assert_eq!(running.len(), 1);
    assert_eq!(running[0].1.name, "w1");
    assert_eq!(running[0].1.done, 4);
}

fn segment(id: u32, host: &str, size: u64) -> SegmentInfo {
    SegmentInfo {
        id,
        host: host.into(),
        shm_path: format!("/dev/shm/pnet-test-{id}"),
        server: "127.0.0.1:9".into(),
        size,
    }
}

#[test]
fn workers_offer_segments_and_lost_ones_break_their_allocations() {
    let mut h = hub(4);
    let mut out = Vec::new();
    h.worker_joined(0, &hello("w0", &["GPI"]), 0, &mut out);
    h.worker_joined(1, &hello("w1", &["GPI"]), 0, &mut out);
    h.worker_joined(2, &hello("plain", &[]), 0, &mut out);
    // A worker reports its segment with a wrong id: the hub uses the worker's.
    h.worker_msgs(
        0,
        vec![WorkerMsg::Memory(segment(7, "a", 1 << 20))],
        &mut out,
    );
    h.worker_msgs(
        1,
        vec![WorkerMsg::Memory(segment(1, "b", 1 << 20))],
        &mut out,
    );
    let logs: Vec<String> = out
        .drain(..)
        .filter_map(|c| match c {
            HubCmd::Log(l) => Some(l),
            _ => None,
        })
        .collect();
    assert!(
        logs.iter()
            .any(|l| l.contains("reported its segment as number 7; using 0")),
        "{logs:#?}"
    );
    assert!(
        logs.iter()
            .any(|l| l.contains("worker 1 `w1` offers 1 MiB of working memory on host `b`")),
        "{logs:#?}"
    );
    let m = h.memory_status();
    assert_eq!((m.segments, m.capacity, m.allocations), (2, 2 << 20, 0));
    // An allocation spreads over both segments.
    let handle = h.memory().lock().alloc(1000).unwrap();
    let m = h.memory_status();
    assert_eq!((m.allocated, m.allocations), (1000, 1));
    let hosts: Vec<(&str, u64, u64)> = m
        .hosts
        .iter()
        .map(|x| (x.host.as_str(), x.segments, x.allocated))
        .collect();
    assert_eq!(hosts, vec![("a", 1, 500), ("b", 1, 500)]);
    // The worker without a segment goes: nothing changes.
    h.worker_lost(2, "connection closed", None, &mut out);
    assert_eq!(h.memory_status().segments, 2);
    // w1 goes: its segment leaves, the allocation breaks (and the log says which).
    out.clear();
    h.worker_lost(1, "connection closed", None, &mut out);
    let logs: Vec<String> = out
        .drain(..)
        .filter_map(|c| match c {
            HubCmd::Log(l) => Some(l),
            _ => None,
        })
        .collect();
    assert!(
        logs.iter()
            .any(|l| l.contains("`w1` is gone with its working memory") && l.contains(&handle)),
        "{logs:#?}"
    );
    let m = h.memory_status();
    assert_eq!((m.segments, m.capacity), (1, 1 << 20));
    let e = h.memory().lock().locate(&handle, 0, 10).unwrap_err();
    assert!(e.message.contains("is gone"), "{e}");
    // Freeing the broken allocation gives its part in w0's segment back.
    h.memory().lock().free(&handle).unwrap();
    assert_eq!(h.memory_status().allocated, 0);
    assert_eq!(h.memory().lock().stats().per_segment[0].1, 0);
}

#[test]
fn shared_loads_look_only_at_changed_workers_and_stay_exact() {
    // Every pump checks that the kept totals are each worker's tasks of all jobs
    // (`check_shared_loads`); here jobs start, end, are cancelled and a worker is lost
    // while answers come in a scrambled order.
    let mut h = hub(2);
    let mut f = Fakes::default();
    let mut out = Vec::new();
    for w in 0..40 {
        h.worker_joined(w, &hello(&format!("w{w}"), &[]), 0, &mut out);
    }
    let a = h
        .add_job("a", net("square"), &xs(0..300), &mut out)
        .unwrap();
    settle(&mut h, &mut f, &mut out);
    assert_eq!(h.loads_shared, 0, "one job: nothing to share");
    let b = h
        .add_job("b", net("square"), &xs(0..200), &mut out)
        .unwrap();
    settle(&mut h, &mut f, &mut out);
    assert!(h.loads_shared >= 40, "a second job: every worker once");
    // The tasks the last pump sent are shared at the next one; then one answer: only that
    // worker (and the one the answer's next task went to) again.
    h.pump(&mut out);
    f.take(&mut out);
    let before = h.loads_shared;
    f.answer_one(&mut h, 7, &mut out).unwrap();
    settle(&mut h, &mut f, &mut out);
    let looked = h.loads_shared - before;
    assert!((1..=3).contains(&looked), "{looked} workers looked at");
    let mut seed = 12345u64;
    let mut c = None;
    for step in 0.. {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let w = ((seed >> 33) % 40) as u32;
        if f.answer_one(&mut h, w, &mut out).is_none() && f.queues.values().all(|q| q.is_empty()) {
            break;
        }
        settle(&mut h, &mut f, &mut out);
        match step {
            50 => c = Some(h.add_job("c", net("square"), &xs(0..50), &mut out).unwrap()),
            80 => assert!(h.cancel_job(b, &mut out)),
            120 => {
                h.worker_lost(3, "removed", None, &mut out);
                f.queues.remove(&3);
            }
            _ => {}
        }
        f.take(&mut out);
        settle(&mut h, &mut f, &mut out);
        assert!(step < 100_000, "no end");
    }
    let ended: HashMap<JobId, JobOutcome> = f.ended.iter().cloned().collect();
    assert_eq!(ended[&b], JobOutcome::Cancelled);
    assert_eq!(
        squares(&ended[&a]),
        (0..300).map(|x| x * x).collect::<Vec<_>>()
    );
    assert_eq!(
        squares(&ended[&c.unwrap()]),
        (0..50).map(|x| x * x).collect::<Vec<_>>()
    );
}

#[test]
fn a_leaf_s_workers_show_in_its_status_and_name_the_tasks_they_ran() {
    let mut h = traced_hub();
    let mut f = Fakes::default();
    let mut out = Vec::new();
    h.worker_joined(0, &hello("L", &[]), 0, &mut out);
    h.worker_msgs(0, vec![WorkerMsg::Capacity { capacity: 4 }], &mut out);
    let under = |running: Option<u64>, done| {
        (0..2)
            .map(|k| pnet_protocol::LeafWorker {
                worker: k,
                name: format!("w{k}"),
                host: "h2".into(),
                pid: 100 + k,
                capabilities: vec![],
                heartbeat_age_ms: 20,
                running: if k == 1 { running } else { None },
                in_flight: u32::from(k == 1 && running.is_some()),
                done,
            })
            .collect::<Vec<_>>()
    };
    h.worker_msgs(0, vec![WorkerMsg::LeafWorkers(under(None, 0))], &mut out);
    let a = h
        .add_job("a.pnet", net("square"), &xs(0..3), &mut out)
        .unwrap();
    settle(&mut h, &mut f, &mut out);
    // The leaf holds the three tasks (its capacity is 4); its worker w1 runs the first.
    let q = f.queues[&0].clone();
    assert_eq!(q.len(), 3);
    let first = q[0].task;
    // None started yet: `gspc jobs` counts what the leaf's workers run, not what it holds.
    let counts = |h: &Hub| {
        let j = &h.jobs()[0];
        (j.tasks_running, j.tasks_sent)
    };
    assert_eq!(counts(&h), (0, 3));
    h.worker_msgs(
        0,
        vec![WorkerMsg::LeafWorkers(under(Some(first), 0))],
        &mut out,
    );
    assert_eq!(counts(&h), (1, 2));
    let st = h.worker_status_of(0).unwrap();
    assert_eq!((st.capacity, st.in_flight), (Some(4), 3));
    let names: Vec<&str> = st.workers.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, ["w0", "w1"]);
    let w1 = &st.workers[1];
    assert_eq!(
        (w1.host.as_str(), w1.pid, w1.state.as_str()),
        ("h2", Some(101), "up")
    );
    assert_eq!(
        w1.running.as_ref().map(|r| r.transition.as_str()),
        Some("square")
    );
    assert_eq!(st.workers[0].running, None);
    let t = h.tasks(a).unwrap();
    let live: Vec<(&str, &str)> = (t.tasks.iter())
        .map(|t| (t.state.as_str(), t.worker.as_str()))
        .collect();
    assert_eq!(live, [("running", "L/w1"), ("sent", "L"), ("sent", "L")]);
    let st = h.job_status(a).unwrap();
    assert_eq!((st.tasks_running, st.tasks_sent), (1, 2));
    // Between its reports of all its workers, the leaf says when one starts a task.
    h.worker_msgs(
        0,
        vec![WorkerMsg::Batch(vec![WorkerMsg::OfWorker {
            worker: 0,
            msgs: vec![WorkerMsg::Heartbeat {
                running: Some(q[1].task),
            }],
        }])],
        &mut out,
    );
    assert_eq!(counts(&h), (2, 1));
    let t = h.tasks(a).unwrap();
    let live: Vec<(&str, &str)> = (t.tasks.iter())
        .map(|t| (t.state.as_str(), t.worker.as_str()))
        .collect();
    assert_eq!(
        live,
        [("running", "L/w1"), ("running", "L/w0"), ("sent", "L")]
    );
    let st = h.worker_status_of(0).unwrap();
    assert_eq!(st.running, None, "the leaf itself runs nothing");
    // Answers come grouped by the worker that ran them: the records name it.
    let answer = |t: &TaskRun| WorkerMsg::Done {
        task: t.task,
        outputs: vec![match t.inputs[..] {
            [Value::Long(n)] => Value::Long(n * n),
            _ => Value::Control,
        }],
    };
    h.worker_msgs(
        0,
        vec![WorkerMsg::Batch(vec![
            WorkerMsg::OfWorker {
                worker: 1,
                msgs: vec![answer(&q[0]), answer(&q[1])],
            },
            WorkerMsg::OfWorker {
                worker: 0,
                msgs: vec![answer(&q[2])],
            },
        ])],
        &mut out,
    );
    f.queues.clear();
    settle(&mut h, &mut f, &mut out);
    let t = h.tasks(a).unwrap();
    let ran: Vec<(&str, &str)> = (t.tasks.iter())
        .map(|t| (t.state.as_str(), t.worker.as_str()))
        .collect();
    assert_eq!(ran, [("done", "L/w1"), ("done", "L/w1"), ("done", "L/w0")]);
    // A trace draws each in a lane of its own, numbered as under the root.
    let id = |k| pnet_protocol::leaf_worker_id(0, k).unwrap();
    assert_eq!(
        t.workers,
        vec![(id(0), "L/w0".to_string()), (id(1), "L/w1".to_string())]
    );
    assert!(
        t.tasks.iter().all(|t| t.worker_id >= id(0)),
        "{:?}",
        t.tasks
    );
    assert_eq!(squares(&f.ended[0].1), vec![0, 1, 4]);
}
