//! The Chrome trace-event file (`--trace`, `gspc trace`): `{"traceEvents":[...]}` with one
//! lane per worker (`pid` 1, `tid` = worker id, named by a `thread_name` metadata event) and
//! one complete event (`ph: "X"`) per task from its start on the worker to its end, as the
//! worker reported them ([`crate::core::task_span`]); the time it waited from being sent to
//! its start is an async slice `queued` (`ph: "b"`/`"e"`, category `queued`), drawn apart
//! from the lanes. A failed task's slice carries its error (`args.error`). The gspc-run file
//! is written as the job goes, so memory stays flat; open it in chrome://tracing or Perfetto.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use serde_json::{Value, json};

use crate::control::{JobTasks, TaskInfo};
use crate::core::TraceRecord;

/// A task record as the trace draws it.
pub fn record_info(r: &TraceRecord, worker: &str) -> TaskInfo {
    TaskInfo {
        inputs: r.inputs.as_ref().map(|i| i.text()),
        ..record_info_without_inputs(r, worker)
    }
}

/// [`record_info`] without the text of the inputs (`inputs: None`).
pub fn record_info_without_inputs(r: &TraceRecord, worker: &str) -> TaskInfo {
    let us = |d: std::time::Duration| d.as_micros() as u64;
    TaskInfo {
        task: r.task,
        transition: r.name.to_string(),
        module: r.module.to_string(),
        worker_id: r.worker,
        worker: worker.to_string(),
        state: r.outcome.to_string(),
        sent_us: us(r.sent),
        started_us: r.started.map(us),
        ended_us: Some(us(r.end)),
        retries: r.retries,
        error: r.error.clone(),
        log_bytes: 0,
        inputs: None,
    }
}

/// The lanes' clocks: a worker runs one task at a time, so a task is never drawn before
/// the end of the previous one on its lane (the network's jitter could shift a task by
/// less than one trip).
#[derive(Debug, Default)]
pub struct Lanes {
    last_end: HashMap<u32, u64>,
}

impl Lanes {
    /// The events of an ended task (none for a task still in flight).
    pub fn events(&mut self, t: &TaskInfo) -> Vec<Value> {
        let Some(end) = t.ended_us else {
            return Vec::new();
        };
        let last = self.last_end.get(&t.worker_id).copied().unwrap_or(0);
        let reported = t.started_us.is_some();
        let start = t.started_us.unwrap_or(t.sent_us).max(last).min(end);
        self.last_end.insert(t.worker_id, end.max(last));
        let mut args = json!({"task": t.task, "module": t.module, "outcome": t.state,
                              "sent_us": t.sent_us, "queued_us": start - t.sent_us.min(start)});
        if !reported {
            args["note"] = json!("start not reported by the worker: drawn from when it was sent");
        }
        if let Some(e) = &t.error {
            args["error"] = json!(e);
        }
        if t.retries > 0 {
            args["retries"] = json!(t.retries);
        }
        if let Some(i) = &t.inputs {
            args["inputs"] = json!(i);
        }
        let mut v = Vec::with_capacity(3);
        if reported && start > t.sent_us {
            let id = format!("0x{:x}", t.task);
            let name = format!("queued: {}", t.transition);
            v.push(
                json!({"name": name, "cat": "queued", "ph": "b", "id": id, "pid": 1,
                          "tid": t.worker_id, "ts": t.sent_us, "args": {"task": t.task}}),
            );
            v.push(
                json!({"name": name, "cat": "queued", "ph": "e", "id": id, "pid": 1,
                          "tid": t.worker_id, "ts": start}),
            );
        }
        v.push(
            json!({"name": t.transition, "cat": "task", "ph": "X", "pid": 1,
                      "tid": t.worker_id, "ts": start, "dur": end - start, "args": args}),
        );
        v
    }
}

fn header() -> Value {
    json!({"name": "process_name", "ph": "M", "pid": 1, "tid": 0,
           "args": {"name": "gspc agent"}})
}

fn lane_name(id: u32, name: &str) -> Value {
    json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": id, "args": {"name": name}})
}

/// The whole trace of a job's tasks (`gspc trace`): the ended ones; a task in flight has no
/// slice yet.
pub fn chrome_trace(tasks: &JobTasks) -> Value {
    let mut ev = vec![header()];
    for (id, name) in &tasks.workers {
        ev.push(lane_name(*id, name));
    }
    let mut ended: Vec<&TaskInfo> = tasks
        .tasks
        .iter()
        .filter(|t| t.ended_us.is_some())
        .collect();
    ended.sort_by_key(|t| (t.worker_id, t.started_us.unwrap_or(t.sent_us), t.task));
    let mut lanes = Lanes::default();
    for t in ended {
        ev.extend(lanes.events(t));
    }
    json!({"traceEvents": ev, "displayTimeUnit": "ms"})
}

pub(crate) struct TraceWriter {
    out: BufWriter<File>,
    lanes: Lanes,
    names: HashMap<u32, String>,
}

impl TraceWriter {
    pub(crate) fn create(path: &Path) -> io::Result<TraceWriter> {
        let mut out = BufWriter::new(File::create(path)?);
        out.write_all(b"{\"traceEvents\":[\n")?;
        serde_json::to_writer(&mut out, &header())?;
        Ok(TraceWriter {
            out,
            lanes: Lanes::default(),
            names: HashMap::new(),
        })
    }

    fn event(&mut self, v: &Value) -> io::Result<()> {
        self.out.write_all(b",\n")?;
        serde_json::to_writer(&mut self.out, v)?;
        Ok(())
    }

    /// Names the lane of a worker.
    pub(crate) fn worker(&mut self, id: u32, name: &str) -> io::Result<()> {
        self.names.insert(id, name.to_string());
        self.event(&lane_name(id, name))
    }

    pub(crate) fn task(&mut self, r: &TraceRecord) -> io::Result<()> {
        let name = self.names.get(&r.worker).map_or("", String::as_str);
        let info = record_info(r, name);
        for mut e in self.lanes.events(&info) {
            if e["ph"] == "X" {
                // From dispatch to the answer's arrival: the round trip (benchmarks).
                e["args"]["answered_us"] = json!(r.answered.as_micros() as u64);
            }
            self.event(&e)?;
        }
        Ok(())
    }

    pub(crate) fn finish(mut self) -> io::Result<()> {
        self.out.write_all(b"\n]}\n")?;
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    fn record(task: u64, sent: u64, started: Option<u64>, end: u64) -> TraceRecord {
        TraceRecord {
            worker: 3,
            task,
            name: "square".into(),
            module: Arc::from("arith.square"),
            outcome: "done",
            sent: Duration::from_micros(sent),
            started: started.map(Duration::from_micros),
            end: Duration::from_micros(end),
            answered: Duration::from_micros(end + 1),
            error: None,
            retries: 0,
            inputs: None,
        }
    }

    #[test]
    fn writes_valid_trace_json() {
        let dir = std::env::temp_dir().join(format!("pnet-agent-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.json");
        let mut w = TraceWriter::create(&path).unwrap();
        w.worker(3, "compute-h-0").unwrap();
        w.task(&record(17, 1000, Some(1500), 2000)).unwrap();
        let mut failed = record(18, 1000, Some(2000), 2600);
        failed.outcome = "failed";
        failed.error = Some("module `m` said: no".into());
        w.task(&failed).unwrap();
        // No times from the worker: drawn from when it was sent, after the previous task.
        w.task(&record(19, 1000, None, 3000)).unwrap();
        w.finish().unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let ev = v["traceEvents"].as_array().unwrap();
        let slices: Vec<&Value> = ev.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(ev[1]["args"]["name"], "compute-h-0");
        assert_eq!(ev[1]["tid"], 3);
        assert_eq!(slices.len(), 3);
        assert_eq!(slices[0]["name"], "square");
        assert_eq!(slices[0]["ts"], 1500);
        assert_eq!(slices[0]["dur"], 500);
        assert_eq!(slices[0]["args"]["task"], 17);
        assert_eq!(slices[0]["args"]["module"], "arith.square");
        assert_eq!(slices[0]["args"]["outcome"], "done");
        assert_eq!(slices[0]["args"]["queued_us"], 500);
        assert_eq!(slices[0]["args"]["answered_us"], 2001);
        assert_eq!(slices[1]["ts"], 2000);
        assert_eq!(slices[1]["args"]["error"], "module `m` said: no");
        assert_eq!(
            slices[2]["ts"], 2600,
            "not before the end of the previous task"
        );
        assert_eq!(slices[2]["dur"], 400);
        let queued: Vec<&Value> = ev.iter().filter(|e| e["cat"] == "queued").collect();
        assert_eq!(
            queued.len(),
            4,
            "a begin and an end for the two reported tasks"
        );
        assert_eq!(queued[0]["ph"], "b");
        assert_eq!(queued[0]["ts"], 1000);
        assert_eq!(queued[1]["ph"], "e");
        assert_eq!(queued[1]["ts"], 1500);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_whole_trace_from_task_records() {
        let mut lanes_in = Vec::new();
        for (i, (s, e)) in [(10, 20), (20, 35), (35, 40)].into_iter().enumerate() {
            lanes_in.push(record_info(&record(i as u64, 0, Some(s), e), "w"));
        }
        let mut running = lanes_in[0].clone();
        running.ended_us = None;
        running.task = 9;
        lanes_in.push(running);
        let t = JobTasks {
            job: 1,
            tasks: lanes_in,
            workers: vec![(3, "w".into())],
            ..JobTasks::default()
        };
        let v = chrome_trace(&t);
        let x: Vec<(u64, u64)> = v["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["ph"] == "X")
            .map(|e| (e["ts"].as_u64().unwrap(), e["dur"].as_u64().unwrap()))
            .collect();
        assert_eq!(x, vec![(10, 10), (20, 15), (35, 5)]);
    }
}
