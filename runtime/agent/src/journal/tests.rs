//! The journal: a hub that "crashes" (is dropped) part way through its jobs comes back from
//! its journal with the same results, re-running only the tasks whose results were not
//! journaled; torn tails, other versions and a missing journal.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use pnet_engine::RunConfig;
use pnet_protocol::{AgentMsg, Hello, Secret, TaskRun, WorkerMsg};
use pnet_stdlib::Value;

use super::*;
use crate::core::CoreConfig;
use crate::core::tests::{net, xs};
use crate::hub::{HubCmd, HubConfig};
use crate::sched::SchedConfig;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pnet-journal-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn hub() -> Hub {
    Hub::new(
        HubConfig {
            run: RunConfig::default(),
            core: CoreConfig {
                control: true,
                wait_for_workers: true,
                sched: SchedConfig::fixed(3),
                ..CoreConfig::default()
            },
            job_prefix: true,
            keep_ended: 100,
            forget_modules: true,
        },
        1,
    )
}

fn hello(name: &str) -> Hello {
    Hello {
        protocol: pnet_protocol::PROTOCOL_VERSION,
        secret: Secret::from_hex(&"00".repeat(32)).unwrap(),
        name: name.into(),
        host: "localhost".into(),
        pid: 1,
        capabilities: Vec::new(),
        socket: None,
    }
}

/// Fake workers: the tasks each holds, and every answer given (job, input).
#[derive(Default)]
struct Fakes {
    queues: HashMap<u32, Vec<TaskRun>>,
    ran: Vec<(JobId, i64)>,
    ended: HashMap<JobId, JobOutcome>,
    /// Cancels to answer (worker, task).
    cancels: Vec<(u32, u64)>,
}

impl Fakes {
    fn take(&mut self, out: &mut Vec<HubCmd>) {
        for c in out.drain(..) {
            match c {
                HubCmd::Send {
                    worker,
                    msg: AgentMsg::Run(runs),
                } => self.queues.entry(worker).or_default().extend(runs),
                HubCmd::Send {
                    worker,
                    msg: AgentMsg::Cancel { task },
                } => {
                    if let Some(q) = self.queues.get_mut(&worker) {
                        q.retain(|t| t.task != task);
                    }
                    self.cancels.push((worker, task));
                }
                HubCmd::Reply {
                    reply: crate::hub::ClientReply::Outcome { job, outcome },
                    ..
                } => {
                    self.ended.insert(job, outcome);
                }
                _ => {}
            }
        }
    }

    /// Worker `w` answers its oldest task: the square of its input.
    fn answer(&mut self, h: &mut Hub, w: u32, out: &mut Vec<HubCmd>) -> bool {
        if let Some((w, task)) = self.cancels.pop() {
            h.worker_msgs(w, vec![WorkerMsg::Cancelled { task }], out);
            return true;
        }
        let Some(q) = self.queues.get_mut(&w).filter(|q| !q.is_empty()) else {
            return false;
        };
        let t = q.remove(0);
        let Value::Long(n) = t.inputs[0] else {
            panic!("not a long")
        };
        self.ran.push((crate::hub::split_task(t.task).0, n));
        let msg = WorkerMsg::Done {
            task: t.task,
            outputs: vec![Value::Long(n * n)],
        };
        h.worker_msgs(w, vec![msg], out);
        true
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

fn join(h: &mut Hub, f: &mut Fakes, out: &mut Vec<HubCmd>) {
    for w in 0..2 {
        h.worker_joined(w, &hello(&format!("w{w}")), 0, out);
    }
    settle(h, f, out);
}

/// Answers `n` tasks round-robin over the two workers (fewer if they run out).
fn answer(h: &mut Hub, f: &mut Fakes, out: &mut Vec<HubCmd>, n: usize) {
    let mut k = 0;
    let mut idle = 0;
    while k < n && idle < 2 {
        if f.answer(h, (k % 2) as u32, out) {
            idle = 0;
        } else {
            idle += 1;
        }
        k += 1;
        settle(h, f, out);
    }
}

fn squares(o: &JobOutcome) -> Vec<i64> {
    let JobOutcome::Done { outputs, .. } = o else {
        panic!("{o:?}")
    };
    let mut v: Vec<i64> = outputs[0]
        .1
        .iter()
        .map(|v| match v {
            Value::Long(n) => *n,
            _ => panic!(),
        })
        .collect();
    v.sort_unstable();
    v
}

#[test]
fn a_crashed_hub_brings_its_jobs_back_and_reruns_only_unjournaled_tasks() {
    for crash_after in [0, 1, 7, 20, 34] {
        let dir = scratch(&format!("crash{crash_after}"));
        let mut out = Vec::new();
        let mut f = Fakes::default();
        let mut h = hub();
        start(&mut h, &dir).unwrap();
        join(&mut h, &mut f, &mut out);
        let a = h.add_job("a", net("square"), &xs(0..20), &mut out).unwrap();
        let b = h
            .add_job("b", net("square"), &xs(100..115), &mut out)
            .unwrap();
        h.name_job(b, "bee".into());
        // A job that ends before the crash keeps its outcome.
        let c = h.add_job("c", net("square"), &xs(7..8), &mut out).unwrap();
        settle(&mut h, &mut f, &mut out);
        while !f.ended.contains_key(&c) {
            assert!(h.has_job(c));
            let w = if f
                .queues
                .get(&0)
                .is_some_and(|q| q.iter().any(|t| t.task >> 40 == c))
            {
                0
            } else {
                1
            };
            f.answer(&mut h, w, &mut out);
            settle(&mut h, &mut f, &mut out);
            if h.wait_for(c, 9, &mut out).is_ok() {
                f.take(&mut out);
            }
        }
        answer(&mut h, &mut f, &mut out, crash_after);
        let done_before: Vec<(JobId, i64)> = f.ran.clone();
        let ended_before = h.jobs().iter().filter(|j| j.state != "running").count();
        assert!(ended_before >= 1);
        // The crash: the hub and its workers are gone (what was answered is journaled).
        drop(h);
        let mut g = hub();
        let r = resume(&mut g, &dir).unwrap();
        assert!(r.torn.is_none());
        assert_eq!(r.ended, ended_before);
        assert_eq!(r.live.len(), 3 - ended_before);
        let mut f2 = Fakes::default();
        join(&mut g, &mut f2, &mut out);
        for _ in 0..200 {
            answer(&mut g, &mut f2, &mut out, 10);
        }
        for job in [a, b, c] {
            g.wait_for(job, job, &mut out).unwrap();
        }
        f2.take(&mut out);
        assert_eq!(
            squares(&f2.ended[&a]),
            (0..20).map(|n| n * n).collect::<Vec<_>>()
        );
        assert_eq!(
            squares(&f2.ended[&b]),
            (100..115).map(|n| n * n).collect::<Vec<_>>()
        );
        assert_eq!(squares(&f2.ended[&c]), vec![49]);
        // Nothing answered before the crash ran again.
        for t in &f2.ran {
            assert!(!done_before.contains(t), "{t:?} ran again");
        }
        assert_eq!(done_before.len() + f2.ran.len(), 20 + 15 + 1);
        let jobs = g.jobs();
        assert_eq!(
            jobs.iter().find(|j| j.id == b).unwrap().name.as_deref(),
            Some("bee")
        );
        // Job numbers go on.
        let d = g.add_job("d", net("square"), &xs(0..1), &mut out).unwrap();
        assert_eq!(d, 4);
        drop(g);
        // Resumed twice: the ended jobs are kept, the new one is back.
        let mut k = hub();
        let r = resume(&mut k, &dir).unwrap();
        assert_eq!((r.ended, r.live.clone()), (3, vec![4]));
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_torn_tail_is_cut_off_and_other_journals_are_refused() {
    let dir = scratch("torn");
    let mut out = Vec::new();
    let mut f = Fakes::default();
    let mut h = hub();
    start(&mut h, &dir).unwrap();
    join(&mut h, &mut f, &mut out);
    h.add_job("a", net("square"), &xs(0..10), &mut out).unwrap();
    settle(&mut h, &mut f, &mut out);
    answer(&mut h, &mut f, &mut out, 4);
    drop(h);
    let path = dir.join(JOURNAL_FILE);
    let whole = std::fs::read(&path).unwrap();
    let good = parse(&whole).unwrap();
    assert!(good.torn.is_none());
    let n = good.records.len();
    assert_eq!(n, 1 + 4);

    // The last record cut in the middle: the others are read, the cut one is dropped.
    std::fs::write(&path, &whole[..whole.len() - 3]).unwrap();
    let mut g = hub();
    let r = resume(&mut g, &dir).unwrap();
    let (why, bytes) = r.torn.unwrap();
    assert!(why.contains("cut short"), "{why}");
    assert!(bytes > 0);
    assert_eq!(r.live, vec![1]);
    drop(g);
    // The rewritten journal has no tail any more (3 of the 4 results).
    let again = parse(&std::fs::read(&path).unwrap()).unwrap();
    assert!(again.torn.is_none());
    assert_eq!(again.records.len(), n - 1);

    // Garbage after the records.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend_from_slice(&[0xff; 40]);
    std::fs::write(&path, &bytes).unwrap();
    let c = parse(&bytes).unwrap();
    assert_eq!(c.records.len(), n - 1);
    assert!(c.torn.is_some());
    // A flipped byte inside the last record: its checksum says so.
    let mut flipped = std::fs::read(&path).unwrap();
    flipped.truncate(c.valid_len as usize);
    let last = flipped.len() - 2;
    flipped[last] ^= 0x55;
    let c = parse(&flipped).unwrap();
    assert_eq!(c.records.len(), n - 2);
    assert_eq!(c.torn.unwrap().0, "a record with a wrong checksum");

    // Another version, another file, no file.
    let mut v2 = flipped.clone();
    v2[8] = 2;
    assert_eq!(
        parse(&v2).unwrap_err(),
        "it is a journal of format version 2; this gspc reads version 1 (resume with the \
         gspc that wrote it)"
    );
    std::fs::write(&path, &v2).unwrap();
    let e = resume(&mut hub(), &dir).unwrap_err();
    assert!(e.contains("format version 2"), "{e}");
    assert!(
        parse(b"hello, world")
            .unwrap_err()
            .contains("not a gspc journal")
    );
    // An empty journal or a cut header (a full disk at boot) says so, and what to do.
    let fresh = "boot without --resume to start a new journal (this file is then kept as \
                 journal.old)";
    assert_eq!(
        parse(b"").unwrap_err(),
        format!("it is empty (its runtime wrote nothing to it: a full disk?); {fresh}")
    );
    assert_eq!(
        parse(b"GSPCJ").unwrap_err(),
        format!(
            "its header is cut short (5 bytes; its runtime wrote nothing more: a full disk?); \
             {fresh}"
        )
    );
    assert!(
        parse(b"GSPCJRNL\x01\x00")
            .unwrap_err()
            .contains("cut short")
    );
    assert!(parse(b"GSPX").unwrap_err().contains("not a gspc journal"));
    std::fs::remove_file(&path).unwrap();
    let e = resume(&mut hub(), &dir).unwrap_err();
    assert!(e.contains("there is no journal in"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn records_round_trip_and_the_writer_flushes() {
    let dir = scratch("rt");
    let path = dir.join(JOURNAL_FILE);
    let recs = vec![
        Record::Name {
            job: 3,
            name: "x".into(),
        },
        Record::Op {
            job: 3,
            firings: 9,
            op: Op::Put {
                place: "p".into(),
                value: Value::Long(5),
            },
        },
    ];
    let j = Journal::create(&path, &recs[..1]).unwrap();
    j.append(recs[1..].iter().cloned());
    j.flush();
    let c = parse(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(c.records, recs);
    // Many small records go through the bounded buffer in order.
    for k in 0..50_000u64 {
        j.append([Record::Op {
            job: 1,
            firings: k,
            op: Op::Discard { task: k },
        }]);
    }
    drop(j);
    let c = parse(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(c.records.len(), 2 + 50_000);
    assert_eq!(
        c.records.last(),
        Some(&Record::Op {
            job: 1,
            firings: 49_999,
            op: Op::Discard { task: 49_999 }
        })
    );
    let _ = Duration::ZERO;
    let _ = std::fs::remove_dir_all(&dir);
}

/// A job fed through put_token and closed, and a job whose eureka cancels its other tasks,
/// crash at every point of their runs and come back to the same results.
#[test]
fn put_tokens_closes_and_eurekas_are_replayed() {
    let feed = || {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/square.ir"),
        )
        .unwrap()
        .replace("place p0 xs : long ", "place p0 xs : long put_token ");
        pnet_bundle::text::parse(&text).unwrap()
    };
    let put = |h: &mut Hub, job: JobId, n: i64, out: &mut Vec<HubCmd>| {
        let request = crate::control::Request::PutToken {
            place: "xs".into(),
            value: Value::Long(n),
        };
        h.job_control(job, 77, request, out);
    };
    // The whole run without a crash, then with a crash after each answer.
    let mut reference: Option<(Vec<i64>, Vec<i64>)> = None;
    for crash_after in [usize::MAX, 0, 1, 2, 3, 5, 8] {
        let dir = scratch(&format!("feed{crash_after}"));
        let mut out = Vec::new();
        let mut f = Fakes::default();
        let mut h = hub();
        start(&mut h, &dir).unwrap();
        join(&mut h, &mut f, &mut out);
        let a = h.add_job("a", feed(), &xs(0..3), &mut out).unwrap();
        let e = h.add_job("e", net("eureka"), &xs(1..9), &mut out).unwrap();
        put(&mut h, a, 10, &mut out);
        settle(&mut h, &mut f, &mut out);
        let mut answered = 0;
        let mut fed = false;
        let mut crashed = false;
        for _ in 0..400 {
            if answered == 4 && !fed {
                put(&mut h, a, 11, &mut out);
                h.job_control(a, 77, crate::control::Request::Close, &mut out);
                fed = true;
            }
            if answered == crash_after && !crashed {
                crashed = true;
                drop(h);
                let c = parse(&std::fs::read(dir.join(JOURNAL_FILE)).unwrap()).unwrap();
                let ops: Vec<&Op> = c
                    .records
                    .iter()
                    .filter_map(|r| match r {
                        Record::Op { op, .. } => Some(op),
                        _ => None,
                    })
                    .collect();
                assert!(ops.iter().any(|o| matches!(o, Op::Put { .. })));
                if crash_after >= 5 {
                    assert!(ops.iter().any(|o| matches!(o, Op::Close)));
                    assert!(ops.iter().any(|o| matches!(o, Op::Discard { .. })));
                }
                h = hub();
                let r = resume(&mut h, &dir).unwrap();
                assert!(r.failed.is_empty(), "{:?}", r.failed);
                f = Fakes {
                    ran: f.ran,
                    ..Fakes::default()
                };
                join(&mut h, &mut f, &mut out);
            }
            let w = (answered % 2) as u32;
            if f.answer(&mut h, w, &mut out) || f.answer(&mut h, 1 - w, &mut out) {
                answered += 1;
            }
            settle(&mut h, &mut f, &mut out);
        }
        for job in [a, e] {
            h.wait_for(job, job, &mut out).unwrap();
        }
        f.take(&mut out);
        let got = (squares(&f.ended[&a]), squares_of(&f.ended[&e], "hits"));
        assert_eq!(got.0, vec![0, 1, 4, 100, 121], "crash after {crash_after}");
        assert_eq!(got.1.len(), 1, "crash after {crash_after}");
        match &reference {
            None => reference = Some(got),
            Some(r) => assert_eq!(r.0, got.0, "crash after {crash_after}"),
        }
        drop(h);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

fn squares_of(o: &JobOutcome, port: &str) -> Vec<i64> {
    let JobOutcome::Done { outputs, .. } = o else {
        panic!("{o:?}")
    };
    outputs
        .iter()
        .find(|(p, _)| p == port)
        .unwrap()
        .1
        .iter()
        .map(|v| match v {
            Value::Long(n) => *n,
            _ => panic!(),
        })
        .collect()
}

/// With no job running, a journal that grew past its bound is rewritten as the ended jobs'
/// outcomes, which a resume keeps.
#[test]
fn an_idle_runtime_compacts_its_journal() {
    let dir = scratch("compact");
    let path = dir.join(JOURNAL_FILE);
    let mut out = Vec::new();
    let mut f = Fakes::default();
    let mut h = hub();
    let mut j = Journal::create(&path, &[]).unwrap();
    j.set_compact_at(2000);
    h.set_journal(j);
    join(&mut h, &mut f, &mut out);
    let a = h
        .add_job("a", net("square"), &xs(0..100), &mut out)
        .unwrap();
    h.name_job(a, "big".into());
    settle(&mut h, &mut f, &mut out);
    answer(&mut h, &mut f, &mut out, 1000);
    assert!(!h.has_job(a));
    h.journal().unwrap().flush();
    let c = parse(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(c.records.len(), 1, "{:?}", c.records.first());
    assert!(matches!(&c.records[0], Record::Ended { job: 1, name: Some(n), .. } if n == "big"));
    // Journaling goes on in the new file.
    let b = h.add_job("b", net("square"), &xs(0..1), &mut out).unwrap();
    drop(h);
    let mut g = hub();
    let r = resume(&mut g, &dir).unwrap();
    assert_eq!((r.ended, r.live), (1, vec![b]));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_resume_summary_and_the_note_of_a_journal_moved_aside() {
    let none = Resumed {
        ended: 2,
        ..Resumed::default()
    };
    assert_eq!(none.summary(), "resumed no job, 2 ended job(s) kept");
    let two = Resumed {
        live: vec![1, 3],
        ..Resumed::default()
    };
    assert_eq!(
        two.summary(),
        "resumed 2 job(s) (1, 3), 0 ended job(s) kept"
    );

    let dir = scratch("note");
    let path = dir.join(JOURNAL_FILE);
    let old = dir.join("journal.old");
    let submit = |job| Record::Submit {
        job,
        net: "n".into(),
        bundle: Vec::new(),
        inputs: Vec::new(),
        module_path: Vec::new(),
        submitted_unix: 0,
        seed: 0,
    };
    let end = Record::End {
        job: 1,
        outcome: JobOutcome::Cancelled,
        tasks_done: 0,
        elapsed_ms: 0,
    };
    drop(Journal::create(&path, &[submit(1), submit(2), end.clone(), submit(4)]).unwrap());
    assert_eq!(unfinished_jobs(&path), Some(vec![2, 4]));
    let note = kept_note(&path, &old);
    assert!(
        note.contains(&format!("kept as {}", old.display())),
        "{note}"
    );
    assert!(
        note.contains("its 2 unfinished job(s) (2, 4) are not brought back"),
        "{note}"
    );
    // All ended: only where the old journal is.
    drop(Journal::create(&path, &[submit(1), end]).unwrap());
    assert_eq!(unfinished_jobs(&path), Some(vec![]));
    assert!(!kept_note(&path, &old).contains("unfinished"));
    // Not a journal: no jobs to name.
    std::fs::write(&path, b"hello").unwrap();
    assert_eq!(unfinished_jobs(&path), None);
    assert!(kept_note(&path, &old).contains("kept as"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failed_compaction_says_the_journal_stopped_and_why() {
    let dir = scratch("compact-fails");
    let path = dir.join(JOURNAL_FILE);
    let mut out = Vec::new();
    let mut f = Fakes::default();
    let mut h = hub();
    let mut j = Journal::create(&path, &[]).unwrap();
    j.set_compact_at(2000);
    h.set_journal(j);
    assert_eq!(h.journal_state(), "on");
    // The rewrite goes through `journal.new`: a folder there makes it fail (also for root).
    std::fs::create_dir(path.with_extension("new")).unwrap();
    join(&mut h, &mut f, &mut out);
    let a = h
        .add_job("a", net("square"), &xs(0..100), &mut out)
        .unwrap();
    settle(&mut h, &mut f, &mut out);
    answer(&mut h, &mut f, &mut out, 1000);
    assert!(!h.has_job(a));
    assert!(h.journal().is_none());
    let state = h.journal_state();
    assert!(
        state.starts_with(&format!(
            "stopped: cannot rewrite the journal {}: ",
            path.display()
        )) && state.ends_with("(the jobs from then on are not journaled)"),
        "{state}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
