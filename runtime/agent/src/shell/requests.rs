//! The answers to control clients: a job client's replies, and a runtime client's requests
//! (status, jobs, submit, wait, cancel, tokens, workers, global memory, stop) dispatched to
//! the hub and to the other parts of the shell.

use std::collections::HashSet;

use pnet_protocol::frame::encode;

use super::{End, Mode, Shell};
use crate::control::{Request, RtRequest, RtResponse, RtWorker, RuntimeStatus};
use crate::hub::{ClientReply, HubCmd};

impl Shell<'_> {
    pub(super) fn send_reply(&self, client: u64, reply: ClientReply) {
        let Some(c) = self.clients.get(&client) else {
            return;
        };
        let bytes = match (c.runtime, reply) {
            (false, ClientReply::Job(r)) => encode(&r),
            (false, ClientReply::Outcome { .. }) => return,
            (true, ClientReply::Job(r)) => encode(&RtResponse::Job(r)),
            (true, ClientReply::Outcome { job, outcome }) => {
                encode(&RtResponse::Outcome { job, outcome })
            }
        };
        let _ = c.tx.send(bytes);
    }

    pub(super) fn reply_rt(&self, client: u64, r: RtResponse) {
        if let Some(c) = self.clients.get(&client) {
            let _ = c.tx.send(encode(&r));
        }
    }

    pub(super) fn runtime_request(
        &mut self,
        client: u64,
        request: RtRequest,
        out: &mut Vec<HubCmd>,
    ) -> Option<End> {
        let request = match request {
            RtRequest::Submit {
                net,
                bundle,
                inputs,
            } => RtRequest::SubmitNamed {
                name: String::new(),
                net,
                bundle,
                inputs,
                module_path: Vec::new(),
            },
            RtRequest::SubmitAt {
                net,
                bundle,
                inputs,
                module_path,
            } => RtRequest::SubmitNamed {
                name: String::new(),
                net,
                bundle,
                inputs,
                module_path,
            },
            r => r,
        };
        let answer = match request {
            RtRequest::Status => RtResponse::Status(self.status(None)),
            RtRequest::StatusPage { offset, limit } => {
                RtResponse::Status(self.status(Some((offset, limit))))
            }
            RtRequest::Jobs => RtResponse::Jobs(self.hub.jobs()),
            RtRequest::Submit { .. } | RtRequest::SubmitAt { .. } => {
                unreachable!("made a SubmitNamed above")
            }
            RtRequest::Tasks { job } => match self.hub.tasks(job) {
                Some(t) => RtResponse::Tasks(t),
                None => RtResponse::Error(format!("there is no job {job} (see `gspc jobs`)")),
            },
            RtRequest::Logs { job, task } => match self.hub.logs(job, task) {
                Ok(l) => RtResponse::Logs(l),
                Err(e) => RtResponse::Error(e),
            },
            RtRequest::SubmitNamed {
                name,
                net,
                bundle,
                inputs,
                module_path,
            } => {
                if self.stopping.is_some() {
                    RtResponse::Error("the runtime is stopping; it takes no more jobs".into())
                } else {
                    match crate::control::json::decode_bundle(&bundle, &net) {
                        Err(e) => RtResponse::Error(e),
                        Ok(b) => match self.hub.add_job_at(
                            &net,
                            b,
                            Some(bundle),
                            &inputs,
                            module_path,
                            out,
                        ) {
                            Ok(job) => {
                                self.refresh_welcome_defs();
                                if name.is_empty() {
                                    self.log.line(&format!("job {job} submitted: {net}"));
                                } else {
                                    self.log
                                        .line(&format!("job {job} submitted: {net} as `{name}`"));
                                    self.hub.name_job(job, name);
                                }
                                RtResponse::Submitted { job }
                            }
                            Err(e) => RtResponse::Error(format!("{net}: {e}")),
                        },
                    }
                }
            }
            RtRequest::Wait { job } => match self.hub.wait_for(job, client, out) {
                Ok(()) => return None,
                Err(e) => RtResponse::Error(e),
            },
            RtRequest::Cancel { job } => {
                if self.hub.cancel_job(job, out) {
                    RtResponse::Ok
                } else if self.hub.jobs().iter().any(|j| j.id == job) {
                    RtResponse::Error(format!("job {job} has already ended"))
                } else {
                    RtResponse::Error(format!("there is no job {job} (see `gspc jobs`)"))
                }
            }
            RtRequest::PutToken { job, place, value } => {
                self.hub
                    .job_control(job, client, Request::PutToken { place, value }, out);
                return None;
            }
            RtRequest::Close { job } => {
                self.hub.job_control(job, client, Request::Close, out);
                return None;
            }
            RtRequest::PutTokenJson { job, place, value } => {
                let request = Request::PutTokenJson { place, value };
                self.hub.job_control(job, client, request, out);
                return None;
            }
            RtRequest::AddWorkers { topology, hosts } => self.add_workers(&topology, hosts),
            RtRequest::RemoveWorkers {
                names,
                class,
                count,
            } => self.remove_workers(&names, class.as_deref(), count, out),
            RtRequest::MemAlloc { size } => self.mem_alloc(size),
            RtRequest::MemFree { handle } => self.mem_free(&handle),
            // None: the memory I/O thread answers later.
            RtRequest::MemWrite {
                handle,
                offset,
                data,
            } => self.mem_write(client, handle, offset, data)?,
            RtRequest::MemRead {
                handle,
                offset,
                size,
            } => self.mem_read(client, handle, offset, size)?,
            RtRequest::MemStats => RtResponse::Memory(self.hub.memory_status()),
            RtRequest::Stop { wait } => {
                if wait {
                    let jobs = self.hub.live_jobs();
                    self.log.line(&format!(
                        "stopping once {} running jobs have ended",
                        jobs.len()
                    ));
                    self.stopping = Some((client, jobs));
                    return None;
                }
                self.log.line("stopping");
                let cancelled = self.hub.cancel_all(out);
                self.flush_sends(out);
                return Some(End::Stopped {
                    cancelled,
                    finished: Vec::new(),
                    client: Some(client),
                });
            }
        };
        self.reply_rt(client, answer);
        None
    }

    /// The runtime's status with every worker (`page` None) or the page `(offset, limit)` of
    /// them by name: only the workers of the page are looked at beyond their names, so that
    /// a monitor polling a runtime of thousands of workers costs little.
    pub(super) fn status(&mut self, page: Option<(u64, u64)>) -> RuntimeStatus {
        enum Row {
            Up(crate::sched::WorkerId),
            Launched(usize),
        }
        let joined = self.hub.workers();
        let up: HashSet<&str> = joined.values().map(|w| w.name.as_str()).collect();
        // (name, place in this list, row): the place orders equal names as the whole list
        // always was (the joined workers first).
        let mut rows: Vec<(&str, usize, Row)> = joined
            .iter()
            .enumerate()
            .map(|(k, (&id, w))| (w.name.as_str(), k, Row::Up(id)))
            .collect();
        for (k, l) in self.launched.iter().enumerate() {
            if !up.contains(l.meta.name.as_str()) {
                rows.push((l.meta.name.as_str(), rows.len(), Row::Launched(k)));
            }
        }
        let (total, workers_up) = (rows.len(), joined.len());
        let (offset, limit) = page.map_or((0, usize::MAX), |(o, l)| {
            (
                usize::try_from(o).unwrap_or(usize::MAX),
                usize::try_from(l).unwrap_or(usize::MAX),
            )
        });
        let offset = offset.min(total);
        let end = offset.saturating_add(limit).min(total);
        // Only the rows up to the page's end are sorted (a page of 100 of 10,000 workers).
        if end < total {
            rows.select_nth_unstable_by(end, |a, b| (a.0, a.1).cmp(&(b.0, b.1)));
            rows.truncate(end);
        }
        rows.sort_unstable_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        let picked: Vec<Row> = rows.into_iter().skip(offset).map(|(_, _, r)| r).collect();
        let mut workers = Vec::with_capacity(picked.len());
        for row in picked {
            match row {
                Row::Up(id) => workers.extend(self.hub.worker_status_of(id)),
                Row::Launched(k) => {
                    let l = &mut self.launched[k];
                    let state = if let Some(r) = self.lost_names.get(&l.meta.name) {
                        format!("lost: {r}")
                    } else {
                        match l.proc.try_wait() {
                            Ok(Some(st)) => format!("exited: {}", pnet_launch::describe(st)),
                            _ => "starting".to_string(),
                        }
                    };
                    workers.push(RtWorker {
                        name: l.meta.name.clone(),
                        host: l.meta.host.clone(),
                        pid: l.meta.pid,
                        capabilities: Vec::new(),
                        state,
                        heartbeat_age_ms: None,
                        running: None,
                        in_flight: 0,
                        done: 0,
                        capacity: None,
                        workers: Vec::new(),
                    });
                }
            }
        }
        let state_dir = match &self.mode {
            Mode::Runtime { state_dir, .. } => state_dir.display().to_string(),
            Mode::Job => String::new(),
        };
        RuntimeStatus {
            pid: std::process::id(),
            address: self.agent_addr.clone(),
            state_dir,
            uptime_ms: self.start.elapsed().as_millis() as u64,
            // Counts only: `jobs()` builds every job's summary.
            jobs_running: self.hub.live_jobs().len() as u64,
            jobs_total: self.hub.job_count() as u64,
            workers,
            workers_total: total as u64,
            workers_up: workers_up as u64,
            workers_offset: offset as u64,
            memory: self.hub.memory_status(),
            journal: self.hub.journal_state(),
        }
    }
}
