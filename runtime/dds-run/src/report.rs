//! What a session did: per task its slot, restarts and end; the outcome; the summary line
//! and the JSON form.

use std::path::PathBuf;
use std::time::Duration;

use pnet_protocol::property::TaskExit;
use serde_json::json;

/// How the session ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every task exited with status 0.
    Success,
    /// A task crashed and had no restart left (or no trigger); the others were stopped.
    TaskFailed {
        /// Index into [`RunReport::tasks`].
        task: usize,
        /// How it ended, e.g. `exited with status 1`.
        how: String,
    },
    /// `--timeout` passed.
    TimedOut(Duration),
    /// Interrupted (SIGINT or SIGTERM).
    Cancelled,
}

/// One task instance in the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskReport {
    pub path: String,
    pub id: u64,
    pub worker: String,
    pub host: String,
    pub slot: usize,
    pub restarts: u32,
    /// How its last run ended; `None` if it was stopped (or never ended).
    pub exit: Option<TaskExit>,
    /// The last lines of its stderr in its last run, if it crashed.
    pub stderr_tail: String,
}

/// The result of [`crate::run`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunReport {
    pub session: String,
    pub topology: String,
    pub tasks: Vec<TaskReport>,
    pub outcome: Outcome,
    pub elapsed: Duration,
    /// The session folder, when it was kept (on this host).
    pub workdir: Option<PathBuf>,
}

/// `1.234 s`.
pub fn seconds(d: Duration) -> String {
    format!("{:.3} s", d.as_secs_f64())
}

impl RunReport {
    /// True for [`Outcome::Success`].
    pub fn success(&self) -> bool {
        self.outcome == Outcome::Success
    }

    /// The sum of the restarts.
    pub fn restarts(&self) -> u32 {
        self.tasks.iter().map(|t| t.restarts).sum()
    }

    /// The number of tasks that crashed in their last run.
    pub fn failures(&self) -> usize {
        self.tasks
            .iter()
            .filter(|t| t.exit.as_ref().is_some_and(|e| !e.success()))
            .count()
    }

    /// The failure message, if the session failed.
    pub fn failure_message(&self) -> Option<String> {
        match &self.outcome {
            Outcome::Success => None,
            Outcome::TaskFailed { task, how } => {
                let t = self.tasks.get(*task)?;
                let mut m = format!("task `{}` {how} on {} ({})", t.path, t.worker, t.host);
                if t.restarts > 0 {
                    m.push_str(&format!(
                        " after {} restart{}",
                        t.restarts,
                        if t.restarts == 1 { "" } else { "s" }
                    ));
                }
                m.push_str("; the other tasks were stopped");
                if !t.stderr_tail.is_empty() {
                    m.push_str("\n  its stderr ended with:");
                    for line in t.stderr_tail.lines() {
                        m.push_str("\n  | ");
                        m.push_str(line);
                    }
                }
                Some(m)
            }
            Outcome::TimedOut(d) => Some(format!(
                "the session did not end within {}; the tasks were stopped",
                seconds(*d)
            )),
            Outcome::Cancelled => Some("cancelled; the tasks were stopped".into()),
        }
    }

    /// `4 tasks, 1 restart, 0 failures in 0.532 s`.
    pub fn summary(&self) -> String {
        let n = self.tasks.len();
        let r = self.restarts();
        let f = self.failures();
        format!(
            "{n} task{}, {r} restart{}, {f} failure{} in {}",
            if n == 1 { "" } else { "s" },
            if r == 1 { "" } else { "s" },
            if f == 1 { "" } else { "s" },
            seconds(self.elapsed)
        )
    }

    /// The report as JSON: `{"session", "topology", "ok", "outcome" ("success",
    /// "task-failed", "timed-out", "cancelled"), "failure" (message or null), "tasks": [{"path",
    /// "id", "worker", "host", "slot", "restarts", "status" ("exited", "signaled",
    /// "not-started", "stopped"), "exit_code", "signal", "message", "stderr_tail"}],
    /// "restarts", "failures", "elapsed_ms", "workdir"}`.
    pub fn to_json(&self) -> serde_json::Value {
        let outcome = match self.outcome {
            Outcome::Success => "success",
            Outcome::TaskFailed { .. } => "task-failed",
            Outcome::TimedOut(_) => "timed-out",
            Outcome::Cancelled => "cancelled",
        };
        let tasks: Vec<serde_json::Value> = self
            .tasks
            .iter()
            .map(|t| {
                let (status, code, signal, message) = match &t.exit {
                    Some(TaskExit::Code(c)) => ("exited", Some(*c), None, None),
                    Some(TaskExit::Signal(s)) => ("signaled", None, Some(*s), None),
                    Some(TaskExit::NotStarted(m)) => ("not-started", None, None, Some(m.clone())),
                    None => ("stopped", None, None, None),
                };
                json!({
                    "path": t.path,
                    "id": t.id.to_string(),
                    "worker": t.worker,
                    "host": t.host,
                    "slot": t.slot,
                    "restarts": t.restarts,
                    "status": status,
                    "exit_code": code,
                    "signal": signal,
                    "message": message,
                    "stderr_tail": t.stderr_tail,
                })
            })
            .collect();
        json!({
            "session": self.session,
            "topology": self.topology,
            "ok": self.success(),
            "outcome": outcome,
            "failure": self.failure_message(),
            "tasks": tasks,
            "restarts": self.restarts(),
            "failures": self.failures(),
            "elapsed_ms": u64::try_from(self.elapsed.as_millis()).unwrap_or(u64::MAX),
            "workdir": self.workdir.as_ref().map(|p| p.display().to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(path: &str, restarts: u32, exit: Option<TaskExit>) -> TaskReport {
        TaskReport {
            path: path.into(),
            id: 7,
            worker: "worker-h-0".into(),
            host: "h".into(),
            slot: 0,
            restarts,
            exit,
            stderr_tail: String::new(),
        }
    }

    #[test]
    fn summary_failure_and_json() {
        let mut r = RunReport {
            session: "s".into(),
            topology: "t".into(),
            tasks: vec![
                task("main/a_0", 1, Some(TaskExit::Code(0))),
                task("main/b_0", 0, None),
            ],
            outcome: Outcome::Success,
            elapsed: Duration::from_millis(1500),
            workdir: None,
        };
        assert_eq!(r.summary(), "2 tasks, 1 restart, 0 failures in 1.500 s");
        assert_eq!(r.failure_message(), None);
        r.tasks[1].exit = Some(TaskExit::Code(3));
        r.tasks[1].stderr_tail = "boom\nbang".into();
        r.outcome = Outcome::TaskFailed {
            task: 1,
            how: "exited with status 3".into(),
        };
        assert_eq!(
            r.failure_message().unwrap(),
            "task `main/b_0` exited with status 3 on worker-h-0 (h); the other tasks were stopped\n  its stderr ended with:\n  | boom\n  | bang"
        );
        let j = r.to_json();
        assert_eq!(j["ok"], false);
        assert_eq!(j["outcome"], "task-failed");
        assert_eq!(j["tasks"][1]["exit_code"], 3);
        assert_eq!(j["tasks"][0]["restarts"], 1);
        assert_eq!(j["restarts"], 1);
        assert_eq!(j["failures"], 1);
        assert_eq!(j["elapsed_ms"], 1500);
    }
}
