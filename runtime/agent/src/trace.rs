//! The Chrome trace-event file (`--trace`): `{"traceEvents":[...]}` with one lane per worker
//! (`pid` 1, `tid` = worker id, named by a `thread_name` metadata event) and one complete
//! event (`ph: "X"`) per task from dispatch to result. Written as the job goes, so memory
//! stays flat; open it in chrome://tracing or Perfetto.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use serde_json::json;

use crate::core::TraceRecord;

pub(crate) struct TraceWriter {
    out: BufWriter<File>,
}

impl TraceWriter {
    pub(crate) fn create(path: &Path) -> io::Result<TraceWriter> {
        let mut out = BufWriter::new(File::create(path)?);
        out.write_all(b"{\"traceEvents\":[\n")?;
        serde_json::to_writer(
            &mut out,
            &json!({"name": "process_name", "ph": "M", "pid": 1, "tid": 0,
                    "args": {"name": "gspc agent"}}),
        )?;
        Ok(TraceWriter { out })
    }

    fn event(&mut self, v: &serde_json::Value) -> io::Result<()> {
        self.out.write_all(b",\n")?;
        serde_json::to_writer(&mut self.out, v)?;
        Ok(())
    }

    /// Names the lane of a worker.
    pub(crate) fn worker(&mut self, id: u32, name: &str) -> io::Result<()> {
        self.event(
            &json!({"name": "thread_name", "ph": "M", "pid": 1, "tid": id,
                           "args": {"name": name}}),
        )
    }

    pub(crate) fn task(&mut self, r: &TraceRecord) -> io::Result<()> {
        let ts = r.start.as_secs_f64() * 1e6;
        let dur = r.end.saturating_sub(r.start).as_secs_f64() * 1e6;
        self.event(
            &json!({"name": &*r.name, "cat": "task", "ph": "X", "pid": 1, "tid": r.worker,
                           "ts": ts, "dur": dur,
                           "args": {"task": r.task, "module": &*r.module, "outcome": r.outcome}}),
        )
    }

    pub(crate) fn finish(mut self) -> io::Result<()> {
        self.out.write_all(b"\n]}\n")?;
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn writes_valid_trace_json() {
        let dir = std::env::temp_dir().join(format!("pnet-agent-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.json");
        let mut w = TraceWriter::create(&path).unwrap();
        w.worker(3, "compute-h-0").unwrap();
        w.task(&TraceRecord {
            worker: 3,
            task: 17,
            name: "square".into(),
            module: "arith.square".into(),
            outcome: "done",
            start: Duration::from_micros(1500),
            end: Duration::from_micros(2000),
        })
        .unwrap();
        w.finish().unwrap();
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let ev = v["traceEvents"].as_array().unwrap();
        assert_eq!(ev.len(), 3);
        assert_eq!(ev[1]["args"]["name"], "compute-h-0");
        assert_eq!(ev[1]["tid"], 3);
        assert_eq!(ev[2]["ph"], "X");
        assert_eq!(ev[2]["name"], "square");
        assert_eq!(ev[2]["ts"], 1500.0);
        assert_eq!(ev[2]["dur"], 500.0);
        assert_eq!(ev[2]["args"]["task"], 17);
        assert_eq!(ev[2]["args"]["module"], "arith.square");
        assert_eq!(ev[2]["args"]["outcome"], "done");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
