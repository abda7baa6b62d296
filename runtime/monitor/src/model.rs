//! The monitor's picture of a run, built from the samples of a [`Source`](crate::Source):
//! the [`Snapshot`] the page shows (as JSON, through the live feed).
//!
//! Times on the page are milliseconds since the monitor started. A source that lists its
//! tasks ([`Sample::tasks`]) gives the Gantt chart's bars with their own times (mapped to the
//! monitor's clock); otherwise the bars are sampled: a bar opens when a worker is seen running
//! a task and closes when it is seen running another one, nothing, or when its count of done
//! tasks grows (so a bar is as precise as the polling interval, and tasks shorter than it
//! may be merged or missed: the page says so).

use std::collections::HashMap;

use serde::Serialize;

use crate::source::{JobSample, Running, Sample, TaskSample, WorkerSample};

/// At most this many bars are kept and sent (the oldest finished ones go first): a snapshot
/// is about 250 bytes of JSON a bar, sent every interval to every open page.
pub const MAX_BARS: usize = 5_000;
/// The window of a worker's load (busy share), in ms.
pub const LOAD_WINDOW_MS: u64 = 10_000;

/// One bar of the Gantt chart.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Bar {
    pub id: String,
    pub job: Option<u64>,
    /// The job's own task number (known from a source that lists tasks).
    pub task: Option<u64>,
    pub worker: String,
    pub transition: String,
    /// `running`, `done`, `failed`, `cancelled`, `lost` (its worker went away), `ended`
    /// (it stopped being seen, the outcome is not known yet).
    pub state: String,
    /// When it was sent to the worker (known only from a source that lists tasks).
    pub sent_ms: Option<u64>,
    pub start_ms: u64,
    /// None while it runs.
    pub end_ms: Option<u64>,
    pub retries: u32,
    pub inputs: Option<String>,
    pub error: Option<String>,
    pub log: Option<String>,
    /// Bytes of log kept by the source (the page asks for them: `log/JOB/TASK`).
    pub log_bytes: u64,
}

/// A worker as the page shows it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct WorkerView {
    #[serde(flatten)]
    pub worker: WorkerSample,
    /// Share of the last [`LOAD_WINDOW_MS`] it spent running tasks (0..=1).
    pub load: f64,
}

/// What the page shows at one moment.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Snapshot {
    /// Counts the snapshots sent.
    pub seq: u64,
    pub title: String,
    /// The monitor's clock (ms since it started).
    pub now_ms: u64,
    pub interval_ms: u64,
    /// False when the last poll failed (`error` says why).
    pub connected: bool,
    pub error: Option<String>,
    pub workers: Vec<WorkerView>,
    pub jobs: Vec<JobSample>,
    pub tasks: Vec<Bar>,
    /// True: the bars come from sampling the workers (see the module docs).
    pub tasks_sampled: bool,
    /// Finished bars left out (beyond the cap, the oldest).
    pub tasks_dropped: u64,
    pub memory: Option<pnet_agent::control::MemoryStatus>,
    /// Why there is no memory table, when there is none.
    pub memory_note: Option<String>,
}

#[derive(Debug)]
struct Track {
    open: Option<usize>,
    done: u64,
    key: Option<Running>,
}

/// Builds snapshots from samples.
#[derive(Debug, Default)]
pub struct Model {
    snap: Snapshot,
    tracks: HashMap<String, Track>,
    next_bar: u64,
    max_bars: usize,
}

impl Model {
    pub fn new(interval_ms: u64) -> Model {
        Model {
            snap: Snapshot {
                interval_ms,
                tasks_sampled: true,
                ..Snapshot::default()
            },
            max_bars: MAX_BARS,
            ..Model::default()
        }
    }

    /// Keeps at most `max_bars` bars instead of [`MAX_BARS`].
    pub fn with_cap(mut self, max_bars: usize) -> Model {
        self.max_bars = max_bars.max(1);
        self
    }

    /// The current snapshot.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snap
    }

    /// A poll failed at `now_ms`.
    pub fn failed(&mut self, now_ms: u64, error: String) {
        self.snap.seq += 1;
        self.snap.now_ms = now_ms;
        self.snap.connected = false;
        self.snap.error = Some(error);
    }

    /// Takes a sample made at `now_ms`.
    pub fn update(&mut self, now_ms: u64, sample: Sample) {
        let s = &mut self.snap;
        s.seq += 1;
        s.now_ms = now_ms;
        s.connected = true;
        s.error = None;
        s.title = sample.title;
        s.memory_note = match &sample.memory {
            None => Some(
                "this source does not report the memory layer (a gspc-run job's status has no \
                 segments; `gspc monitor` on a runtime shows them)"
                    .into(),
            ),
            Some(m) if m.segments == 0 => Some(
                "no segments: no worker has working memory (a shm size in the topology)".into(),
            ),
            Some(_) => None,
        };
        s.memory = sample.memory;
        s.jobs = sample.jobs;
        match sample.tasks {
            Some(tasks) => {
                // The source's clock mapped to ours.
                let offset = now_ms as i64 - sample.clock_ms as i64;
                s.tasks_sampled = false;
                s.tasks_dropped = 0;
                s.tasks = tasks.into_iter().map(|t| reported_bar(t, offset)).collect();
            }
            None => {
                s.tasks_sampled = true;
                self.sample_bars(now_ms, &sample.workers);
            }
        }
        let s = &mut self.snap;
        let mut workers = sample.workers;
        if !s.tasks_sampled {
            // The task each worker runs, from the list.
            for w in &mut workers {
                if let Some(b) = s
                    .tasks
                    .iter()
                    .rev()
                    .find(|b| b.worker == w.name && b.state == "running")
                {
                    w.running = Some(Running {
                        job: b.job,
                        transition: b.transition.clone(),
                    });
                } else if w.running.as_ref().is_some_and(|r| r.transition == "task") {
                    w.running = None;
                }
            }
        }
        s.workers = workers
            .into_iter()
            .map(|w| WorkerView {
                load: load(&s.tasks, &w.name, now_ms),
                worker: w,
            })
            .collect();
        if s.tasks.len() > self.max_bars {
            let mut extra = s.tasks.len() - self.max_bars;
            s.tasks_dropped += extra as u64;
            s.tasks.retain(|b| {
                if extra > 0 && b.end_ms.is_some() {
                    extra -= 1;
                    false
                } else {
                    true
                }
            });
            for t in self.tracks.values_mut() {
                t.open = None;
            }
            for (i, b) in self.snap.tasks.iter().enumerate() {
                if b.end_ms.is_none()
                    && let Some(t) = self.tracks.get_mut(&b.worker)
                {
                    t.open = Some(i);
                }
            }
        }
    }

    /// Opens and closes sampled bars after what the workers run now.
    fn sample_bars(&mut self, now_ms: u64, workers: &[WorkerSample]) {
        let bars = &mut self.snap.tasks;
        for w in workers {
            let t = self.tracks.entry(w.name.clone()).or_insert(Track {
                open: None,
                done: w.done,
                key: None,
            });
            let finished = w.done.saturating_sub(t.done);
            t.done = w.done;
            if let Some(i) = t.open
                && (finished > 0 || w.running != t.key)
            {
                bars[i].end_ms = Some(now_ms);
                bars[i].state = if finished > 0 { "done" } else { "ended" }.into();
                t.open = None;
            }
            if t.open.is_none()
                && let Some(r) = &w.running
            {
                self.next_bar += 1;
                t.open = Some(bars.len());
                bars.push(Bar {
                    id: format!("s{}", self.next_bar),
                    job: r.job,
                    worker: w.name.clone(),
                    transition: r.transition.clone(),
                    state: "running".into(),
                    start_ms: now_ms,
                    ..Bar::default()
                });
            }
            t.key = w.running.clone();
        }
        // Workers that went away.
        self.tracks.retain(|name, t| {
            let here = workers.iter().any(|w| &w.name == name);
            if !here && let Some(i) = t.open {
                bars[i].end_ms = Some(now_ms);
                bars[i].state = "lost".into();
            }
            here
        });
        // The jobs' ends say how the bars that stopped ended.
        for j in &self.snap.jobs {
            let (state, error) = match j.state.as_str() {
                "failed" => ("failed", j.error.clone()),
                "cancelled" => ("cancelled", None),
                "done" | "done (incomplete)" => ("done", None),
                _ => continue,
            };
            for b in bars.iter_mut().filter(|b| b.job == Some(j.id)) {
                if b.state == "ended" || b.state == "running" {
                    b.end_ms.get_or_insert(now_ms);
                    b.state = state.into();
                    if b.error.is_none() {
                        b.error = error.clone();
                    }
                }
            }
        }
        for t in self.tracks.values_mut() {
            if t.open.is_some_and(|i| bars[i].end_ms.is_some()) {
                t.open = None;
            }
        }
    }
}

fn reported_bar(t: TaskSample, offset: i64) -> Bar {
    let map = |ms: u64| (ms as i64 + offset).max(0) as u64;
    Bar {
        id: t.id,
        job: t.job,
        task: t.task,
        worker: t.worker.unwrap_or_default(),
        transition: t.transition,
        state: t.state,
        sent_ms: t.sent_ms.map(map),
        start_ms: t.start_ms.or(t.sent_ms).map(map).unwrap_or(0),
        end_ms: t.end_ms.map(map),
        retries: t.retries,
        inputs: t.inputs,
        error: t.error,
        log: t.log,
        log_bytes: t.log_bytes,
    }
}

/// The share of the last [`LOAD_WINDOW_MS`] that `worker`'s bars cover.
fn load(bars: &[Bar], worker: &str, now_ms: u64) -> f64 {
    let from = now_ms.saturating_sub(LOAD_WINDOW_MS);
    let span = now_ms - from;
    if span == 0 {
        return 0.0;
    }
    let busy: u64 = bars
        .iter()
        .filter(|b| b.worker == worker && !b.worker.is_empty())
        .map(|b| {
            let end = b.end_ms.unwrap_or(now_ms).min(now_ms);
            end.saturating_sub(b.start_ms.max(from))
        })
        .sum();
    (busy as f64 / span as f64).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn worker(name: &str, running: Option<(u64, &str)>, done: u64) -> WorkerSample {
        WorkerSample {
            name: name.into(),
            state: "up".into(),
            running: running.map(|(job, t)| Running {
                job: Some(job),
                transition: t.into(),
            }),
            in_flight: u32::from(running.is_some()),
            done,
            ..WorkerSample::default()
        }
    }

    fn job(id: u64, state: &str, error: Option<&str>) -> JobSample {
        JobSample {
            id,
            net: "n.pnet".into(),
            state: state.into(),
            error: error.map(str::to_string),
            ..JobSample::default()
        }
    }

    fn sample(workers: Vec<WorkerSample>, jobs: Vec<JobSample>) -> Sample {
        Sample {
            title: "t".into(),
            workers,
            jobs,
            ..Sample::default()
        }
    }

    fn bars(m: &Model) -> Vec<String> {
        m.snapshot()
            .tasks
            .iter()
            .map(|b| {
                format!(
                    "{} {} {}..{} {}{}",
                    b.worker,
                    b.transition,
                    b.start_ms,
                    b.end_ms.map_or("".into(), |e| e.to_string()),
                    b.state,
                    b.error.as_ref().map_or("".into(), |e| format!(" ({e})"))
                )
            })
            .collect()
    }

    #[test]
    fn sampled_bars_open_close_and_take_the_jobs_outcome() {
        let mut m = Model::new(100);
        m.update(
            0,
            sample(vec![worker("a", None, 0)], vec![job(1, "running", None)]),
        );
        m.update(
            100,
            sample(
                vec![
                    worker("a", Some((1, "long")), 0),
                    worker("b", Some((2, "bad")), 0),
                ],
                vec![job(1, "running", None), job(2, "running", None)],
            ),
        );
        // The same transition again after a done task: a new bar.
        m.update(
            300,
            sample(
                vec![worker("a", Some((1, "long")), 1), worker("b", None, 0)],
                vec![job(1, "running", None), job(2, "running", None)],
            ),
        );
        m.update(
            400,
            sample(
                vec![worker("a", None, 2), worker("b", None, 0)],
                vec![job(1, "done", None), job(2, "failed", Some("boom"))],
            ),
        );
        assert_eq!(
            bars(&m),
            [
                "a long 100..300 done",
                "b bad 100..300 failed (boom)",
                "a long 300..400 done"
            ]
        );
        let s = m.snapshot();
        assert!(s.tasks_sampled);
        assert_eq!(s.seq, 4);
        assert!(
            s.memory_note
                .as_deref()
                .unwrap()
                .contains("does not report")
        );
        // a ran 300 of the 400 ms so far.
        assert!(
            (s.workers[0].load - 0.75).abs() < 1e-9,
            "{}",
            s.workers[0].load
        );
    }

    #[test]
    fn a_worker_that_goes_away_loses_its_bar() {
        let mut m = Model::new(100);
        m.update(10, sample(vec![worker("a", Some((1, "t")), 0)], vec![]));
        m.update(20, sample(vec![], vec![]));
        assert_eq!(bars(&m), ["a t 10..20 lost"]);
        m.failed(30, "cannot reach".into());
        let s = m.snapshot();
        assert!(!s.connected);
        assert_eq!(s.error.as_deref(), Some("cannot reach"));
    }

    #[test]
    fn reported_tasks_are_mapped_to_the_monitors_clock() {
        let mut m = Model::new(100);
        let mut s = sample(
            vec![worker("a", None, 1)],
            vec![job(1, "failed", Some("x"))],
        );
        s.clock_ms = 5_000;
        s.tasks = Some(vec![TaskSample {
            id: "1/7".into(),
            job: Some(1),
            worker: Some("a".into()),
            transition: "t".into(),
            state: "failed".into(),
            sent_ms: Some(4_000),
            start_ms: Some(4_200),
            end_ms: Some(4_900),
            error: Some("exit 1".into()),
            log: Some("stderr: no".into()),
            ..TaskSample::default()
        }]);
        m.update(1_000, s);
        assert_eq!(bars(&m), ["a t 200..900 failed (exit 1)"]);
        assert_eq!(m.snapshot().tasks[0].sent_ms, Some(0));
        assert!(!m.snapshot().tasks_sampled);
    }

    #[test]
    fn old_finished_bars_are_dropped_past_the_cap() {
        let mut m = Model::new(1).with_cap(50);
        for i in 0..60 {
            m.update(i, sample(vec![worker("a", Some((1, "t")), i)], vec![]));
        }
        let s = m.snapshot();
        assert_eq!(s.tasks.len(), 50);
        assert_eq!(s.tasks_dropped, 10);
        assert_eq!(s.tasks[0].start_ms, 10);
        let open: Vec<&Bar> = s.tasks.iter().filter(|b| b.end_ms.is_none()).collect();
        assert_eq!(open.len(), 1);
        // The next sample closes the open bar (the track still points at it).
        m.update(70, sample(vec![worker("a", None, 1 << 40)], vec![]));
        assert!(m.snapshot().tasks.iter().all(|b| b.end_ms.is_some()));
    }
}
