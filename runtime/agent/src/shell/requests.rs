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
            RtRequest::Status => RtResponse::Status(self.status()),
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

    pub(super) fn status(&mut self) -> RuntimeStatus {
        let mut workers: Vec<RtWorker> = self
            .hub
            .worker_status()
            .into_iter()
            .map(|(_, w)| w)
            .collect();
        let up: HashSet<String> = workers.iter().map(|w| w.name.clone()).collect();
        for l in self.launched.iter_mut() {
            if up.contains(&l.meta.name) {
                continue;
            }
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
            });
        }
        workers.sort_by(|a, b| a.name.cmp(&b.name));
        let jobs = self.hub.jobs();
        let state_dir = match &self.mode {
            Mode::Runtime { state_dir, .. } => state_dir.display().to_string(),
            Mode::Job => String::new(),
        };
        RuntimeStatus {
            pid: std::process::id(),
            address: self.agent_addr.clone(),
            state_dir,
            uptime_ms: self.start.elapsed().as_millis() as u64,
            jobs_running: jobs.iter().filter(|j| j.state == "running").count() as u64,
            jobs_total: jobs.len() as u64,
            workers,
            memory: self.hub.memory_status(),
            journal: match self.hub.journal() {
                None => "off".to_string(),
                Some(j) => j
                    .error()
                    .map_or_else(|| "on".to_string(), |e| format!("stopped: {e}")),
            },
        }
    }
}
