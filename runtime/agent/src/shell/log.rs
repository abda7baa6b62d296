//! Logging and progress: the worker event log (`--log`, and standard error with
//! `--verbose`) and the progress line (`--progress`).

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::time::{Duration, Instant};

use super::{Mode, Shell};
use crate::{AgentConfig, AgentError};

/// The worker event log.
pub(super) struct Logger {
    pub(super) file: Option<BufWriter<File>>,
    pub(super) verbose: bool,
    pub(super) start: Instant,
    pub(super) progress_shown: bool,
    /// Standard error is a terminal: the progress line is redrawn in place; else it goes out
    /// as a line of its own every [`PROGRESS_LINE_EVERY`].
    pub(super) tty: bool,
}

/// How often the progress goes out as a line when standard error is a file or a pipe.
pub(super) const PROGRESS_LINE_EVERY: Duration = Duration::from_secs(5);

impl Logger {
    /// The log of a shell: its file (`--log`; appended to by a runtime, truncated by a job)
    /// and standard error when verbose.
    pub(super) fn open(
        config: &AgentConfig,
        mode: &Mode,
        start: Instant,
    ) -> Result<Logger, AgentError> {
        Ok(Logger {
            file: match &config.log {
                Some(p) => Some(BufWriter::new(
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(matches!(*mode, Mode::Runtime { .. }))
                        .write(true)
                        .truncate(matches!(*mode, Mode::Job))
                        .open(p)
                        .map_err(|e| {
                            AgentError::Setup(format!(
                                "cannot create the log file {}: {e}",
                                p.display()
                            ))
                        })?,
                )),
                None => None,
            },
            verbose: config.verbose,
            start,
            progress_shown: false,
            tty: std::io::stderr().is_terminal(),
        })
    }

    pub(super) fn line(&mut self, msg: &str) {
        let t = self.start.elapsed().as_secs_f64();
        if let Some(f) = &mut self.file {
            let _ = writeln!(f, "[{t:>10.3}s] {msg}");
            let _ = f.flush();
        }
        if self.verbose {
            if self.progress_shown {
                eprint!("\r\x1b[K");
                self.progress_shown = false;
            }
            eprintln!("[{t:>10.3}s] {msg}");
        }
    }

    /// How often the progress is shown.
    pub(super) fn progress_every(&self) -> Duration {
        if self.tty {
            Duration::from_millis(100)
        } else {
            PROGRESS_LINE_EVERY
        }
    }

    /// Clears the progress line if one is shown.
    pub(super) fn clear_progress(&self) {
        if self.progress_shown {
            eprint!("\r\x1b[K");
        }
    }
}

impl Shell<'_> {
    /// Appends what a task logged to its file in `--logs DIR` (`task-N-TRANSITION.log`).
    pub(super) fn task_log(&mut self, task: u64, transition: &str, text: &str) {
        let Some(dir) = &self.config.logs else {
            return;
        };
        let safe: String = transition
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        let path = dir.join(format!("task-{task}-{safe}.log"));
        let r = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(text.as_bytes()));
        if let Err(e) = r {
            self.log.line(&format!(
                "cannot write the task log {}: {e}",
                path.display()
            ));
        }
    }

    /// The progress line of `--progress` (job 0), on standard error: redrawn in place on a
    /// terminal, else a line of its own. `running` counts the tasks started on a worker,
    /// `queued` those waiting in the agent or in a worker's queue.
    pub(super) fn show_progress(&mut self) {
        if let Some(s) = self.hub.job_status(0) {
            let line = format!(
                "{:.1}s  {} firings  tasks: {} done, {} running, {} queued  {} workers",
                self.start.elapsed().as_secs_f64(),
                s.firings,
                s.tasks_done,
                s.tasks_running,
                s.tasks_queued + s.tasks_sent,
                s.workers.len()
            );
            if self.log.tty {
                eprint!("\r\x1b[K{line}");
                self.log.progress_shown = true;
            } else {
                eprintln!("gspc-run: progress: {line}");
            }
        }
    }
}
