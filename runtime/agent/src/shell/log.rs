//! Logging and progress: the worker event log (`--log`, and standard error with
//! `--verbose`) and the progress line (`--progress`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::time::Instant;

use super::{Mode, Shell};
use crate::{AgentConfig, AgentError};

/// The worker event log.
pub(super) struct Logger {
    pub(super) file: Option<BufWriter<File>>,
    pub(super) verbose: bool,
    pub(super) start: Instant,
    pub(super) progress_shown: bool,
}

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

    /// The progress line of `--progress` (job 0), on standard error.
    pub(super) fn show_progress(&mut self) {
        if let Some(s) = self.hub.job_status(0) {
            eprint!(
                "\r\x1b[K{:.1}s  {} firings  tasks: {} done, {} running, {} queued  {} workers",
                self.start.elapsed().as_secs_f64(),
                s.firings,
                s.tasks_done,
                s.tasks_running,
                s.tasks_queued,
                s.workers.len()
            );
            self.log.progress_shown = true;
        }
    }
}
