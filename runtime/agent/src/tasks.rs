//! A job's task records for `gspc tasks`, `gspc trace` and `gspc logs` (and a job's control
//! socket): the ended tasks (the latest [`MAX_TASK_RECORDS`]) and their logs (the latest
//! [`MAX_JOB_LOG_BYTES`] in all). Plain data, no I/O; the hub keeps one per job.

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::control::{JobTasks, MAX_JOB_LOG_BYTES, MAX_TASK_RECORDS, TaskInfo, TaskLog};
use crate::core::{TaskInputs, TraceRecord};

/// The records of one job.
#[derive(Debug, Default)]
pub struct TaskBook {
    /// The ended tasks' records without their inputs, and the inputs apart (as values:
    /// printed when the tasks are asked for, not at every task's end).
    ended: VecDeque<(TaskInfo, Option<TaskInputs>)>,
    dropped: u64,
    logs: VecDeque<TaskLog>,
    /// Log bytes kept per task (a task may log in several parts).
    log_sizes: HashMap<u64, u64>,
    log_bytes: usize,
    workers: BTreeMap<u32, String>,
}

impl TaskBook {
    /// A worker's name (for the lanes of a trace).
    pub fn worker(&mut self, id: u32, name: &str) {
        self.workers.entry(id).or_insert_with(|| name.to_string());
    }

    /// A task has ended (`worker` is its worker's name).
    pub fn ended(&mut self, r: &TraceRecord, worker: &str) {
        self.worker(r.worker, worker);
        if self.ended.len() >= MAX_TASK_RECORDS {
            self.ended.pop_front();
            self.dropped += 1;
        }
        let info = TaskInfo {
            log_bytes: self.log_sizes.get(&r.task).copied().unwrap_or(0),
            ..crate::trace::record_info_without_inputs(r, worker)
        };
        self.ended.push_back((info, r.inputs.clone()));
    }

    /// A task logged `text` (`dropped` bytes before it were cut by the worker).
    pub fn log(&mut self, task: u64, transition: &str, worker: &str, text: String, dropped: u64) {
        self.log_bytes += text.len();
        *self.log_sizes.entry(task).or_default() += text.len() as u64;
        self.logs.push_back(TaskLog {
            task,
            transition: transition.to_string(),
            worker: worker.to_string(),
            text,
            dropped,
        });
        while self.log_bytes > MAX_JOB_LOG_BYTES
            && let Some(old) = self.logs.pop_front()
        {
            self.log_bytes -= old.text.len();
            if let Some(n) = self.log_sizes.get_mut(&old.task) {
                *n = n.saturating_sub(old.text.len() as u64);
                if *n == 0 {
                    self.log_sizes.remove(&old.task);
                }
            }
        }
    }

    /// The logs kept: of one task, or of all.
    pub fn logs(&self, task: Option<u64>) -> Vec<TaskLog> {
        self.logs
            .iter()
            .filter(|l| task.is_none_or(|t| l.task == t))
            .cloned()
            .collect()
    }

    /// The tasks: the ended ones kept, then `live` (in flight, from the job's core), ordered
    /// by the time they were sent.
    pub fn tasks(&self, job: u64, mut live: Vec<TaskInfo>, queued: u64) -> JobTasks {
        let mut workers = self.workers.clone();
        for t in &mut live {
            t.log_bytes = self.log_sizes.get(&t.task).copied().unwrap_or(0);
            workers
                .entry(t.worker_id)
                .or_insert_with(|| t.worker.clone());
        }
        let ended = self.ended.iter().map(|(t, inputs)| TaskInfo {
            inputs: inputs.as_ref().map(TaskInputs::text),
            ..t.clone()
        });
        let mut tasks: Vec<TaskInfo> = ended.chain(live).collect();
        tasks.sort_by_key(|t| (t.sent_us, t.task));
        JobTasks {
            job,
            tasks,
            queued,
            dropped: self.dropped,
            workers: workers.into_iter().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    fn record(task: u64, sent_ms: u64) -> TraceRecord {
        TraceRecord {
            worker: 2,
            task,
            name: Arc::from("t"),
            module: Arc::from("m.f"),
            outcome: "done",
            sent: Duration::from_millis(sent_ms),
            started: Some(Duration::from_millis(sent_ms + 1)),
            end: Duration::from_millis(sent_ms + 3),
            answered: Duration::from_millis(sent_ms + 4),
            error: None,
            retries: 0,
            inputs: None,
        }
    }

    #[test]
    fn keeps_the_latest_records_and_logs() {
        let mut b = TaskBook::default();
        for i in 0..(MAX_TASK_RECORDS as u64 + 5) {
            b.ended(&record(i, i), "w");
        }
        let t = b.tasks(7, Vec::new(), 3);
        assert_eq!(t.tasks.len(), MAX_TASK_RECORDS);
        assert_eq!(t.dropped, 5);
        assert_eq!(t.tasks[0].task, 5);
        assert_eq!(t.tasks[0].started_us, Some(6000));
        assert_eq!(t.queued, 3);
        assert_eq!(t.workers, vec![(2, "w".to_string())]);

        let chunk = "x".repeat(pnet_protocol::TASK_LOG_LIMIT);
        let n = MAX_JOB_LOG_BYTES / chunk.len() + 2;
        for i in 0..n as u64 {
            b.log(i, "t", "w", chunk.clone(), 0);
        }
        assert!(b.logs(Some(0)).is_empty(), "the oldest logs go first");
        assert_eq!(b.logs(Some(n as u64 - 1)).len(), 1);
        assert_eq!(b.logs(None).len(), MAX_JOB_LOG_BYTES / chunk.len());
    }
}
