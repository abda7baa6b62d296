//! The event loop: pumps the hub and carries out its commands (messages to workers, replies
//! to clients, log and trace lines, ended jobs); waits for signals, the events of the worker
//! and control connections and a tick; settles the joining of planned workers; starts the
//! deferred job of `run_job`; at the end shuts the workers' connections down.

use std::collections::HashSet;
use std::io::Write;
use std::sync::atomic::AtomicU32;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::FutureExt;
use pnet_protocol::frame::encode;
use pnet_protocol::peer::current_uid;
use pnet_protocol::{AgentMsg, Secret};
use tokio::signal::unix::{SignalKind, signal};

use super::control_socket::{Auth, bind_control};
use super::launch::LOST_EXIT_WAIT;
use super::workers::{Conn, IoThread, Pending, Shared};
use super::{ClientConn, End, Mode, Shell, ShellEvent, setup};
use crate::AgentError;
use crate::control::{INFO_FILE, SOCKET_FILE};
use crate::hub::HubCmd;

/// Events handled before the hub pumps again.
const EVENT_BATCH: usize = 4096;

impl Shell<'_> {
    pub(super) async fn run(&mut self, start_workers: bool, first: Vec<HubCmd>) -> End {
        match self.run_inner(start_workers, first).await {
            Ok(end) => end,
            Err(e) => End::Job(Box::new(Err(e))),
        }
    }

    pub(super) async fn run_inner(
        &mut self,
        start_workers: bool,
        first: Vec<HubCmd>,
    ) -> Result<End, AgentError> {
        let config = self.config;
        let Some(mut ev_rx) = self.ev_rx.take() else {
            return Err(AgentError::Setup("the shell ran twice".into()));
        };
        let mut sigint = signal(SignalKind::interrupt()).map_err(setup("cannot handle SIGINT"))?;
        let mut sigterm =
            signal(SignalKind::terminate()).map_err(setup("cannot handle SIGTERM"))?;

        let _control = match &self.mode {
            Mode::Job => match &config.control {
                Some(p) => Some(bind_control(p, self.ev_tx.clone(), None, current_uid())?),
                None => None,
            },
            Mode::Runtime { state_dir, secret } => Some(bind_control(
                &state_dir.join(SOCKET_FILE),
                self.ev_tx.clone(),
                Some(Arc::new(Auth {
                    secret: secret.clone(),
                })),
                current_uid(),
            )?),
        };

        let listen = start_workers || self.options.external_workers > 0;
        let mut planned_names: HashSet<String> = HashSet::new();
        // Declared before the acceptor: dropped after it, at the very end (after the
        // workers' Shutdown was flushed), which closes the connections.
        let io_thread;
        let _accept = if listen {
            io_thread = IoThread::start().map_err(setup("cannot start the connection thread"))?;
            let listener = io_thread.listen(config.listen).map_err(|e| {
                AgentError::Setup(format!("cannot listen on {}: {e}", config.listen))
            })?;
            let addr = listener
                .local_addr()
                .map_err(setup("cannot read the listening address"))?;
            if let Some(f) = self.options.on_listen.take() {
                f(addr);
            }
            let secret = match self.options.secret.take() {
                Some(s) => s,
                None => Secret::random().map_err(setup("cannot make the run's secret"))?,
            };
            let shared = Arc::new(Shared {
                secret,
                defs: Mutex::new(self.hub.live_defs()),
                module_path: config
                    .module_path
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect(),
                next_id: AtomicU32::new(0),
                leaf_id: None,
                ev: self.ev_tx.clone(),
                pending: Mutex::new(Pending::default()),
                beats: Mutex::default(),
                leaves: Mutex::default(),
            });
            self.shared = Some(shared.clone());
            let accept = io_thread.serve(listener, shared);
            self.agent_addr = if addr.ip().is_unspecified() {
                format!("{}:{}", pnet_topology::local_hostname(), addr.port())
            } else {
                addr.to_string()
            };
            if let Mode::Runtime { state_dir, .. } = &self.mode {
                let info = serde_json::json!({
                    "pid": std::process::id(),
                    "address": self.agent_addr,
                    "control": state_dir.join(SOCKET_FILE).display().to_string(),
                    "state_dir": state_dir.display().to_string(),
                    "planned_workers": config.plan.workers.len(),
                });
                let path = state_dir.join(INFO_FILE);
                std::fs::write(&path, format!("{info}\n")).map_err(|e| {
                    AgentError::Setup(format!("cannot write {}: {e}", path.display()))
                })?;
                self.log.line(&format!(
                    "runtime pid {} listening on {} (control socket {})",
                    std::process::id(),
                    self.agent_addr,
                    state_dir.join(SOCKET_FILE).display()
                ));
            }
            if start_workers {
                let workers = config.plan.workers.clone();
                let started = self.launch(&workers)?;
                planned_names.extend(started.into_iter().map(|w| w.name));
            }
            Some(accept)
        } else {
            None
        };

        let mut join_over =
            self.is_runtime() || (planned_names.is_empty() && self.options.external_workers == 0);
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut out: Vec<HubCmd> = first;
        let mut more = true;
        let mut last_progress = Instant::now() - Duration::from_secs(1);

        let end = 'outer: loop {
            self.hub.set_now(self.start.elapsed());
            if more || !out.is_empty() {
                if more {
                    more = self.hub.pump(&mut out);
                }
                let mut ended_job = None;
                for cmd in out.drain(..) {
                    match cmd {
                        HubCmd::Send { worker, msg } => {
                            if let Some(c) = self.conns.get(&worker) {
                                let _ = c.tx.send(encode(&msg));
                            }
                        }
                        HubCmd::Reply { client, reply } => self.send_reply(client, reply),
                        HubCmd::Log(m) => self.log.line(&m),
                        HubCmd::Trace(r) => {
                            if let Some(t) = &mut self.trace {
                                let _ = t.task(&r);
                            }
                        }
                        HubCmd::TaskLog {
                            task,
                            transition,
                            text,
                            ..
                        } => self.task_log(task, &transition, &text),
                        HubCmd::Ended { job, result } => {
                            self.refresh_welcome_defs();
                            match &result.as_ref() {
                                Ok(_) => self.log.line(&format!("job {job} ended")),
                                Err(e) if self.is_runtime() => {
                                    self.log.line(&format!("job {job} failed: {e}"))
                                }
                                Err(_) => {}
                            }
                            if !self.is_runtime() {
                                ended_job = Some(result);
                            }
                        }
                    }
                }
                if let Some(r) = ended_job {
                    let mut r = *r;
                    if let Err(AgentError::NoWorker(m)) = &mut r
                        && !self.dead_before_join.is_empty()
                    {
                        let mut dead: Vec<&String> = self.dead_before_join.iter().collect();
                        dead.sort();
                        m.push_str(&format!(
                            " ({} started worker(s) exited before joining: {}; their \
                             messages are above)",
                            dead.len(),
                            dead.iter()
                                .map(|d| d.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ));
                    }
                    // Workers die of the same Ctrl-C as we do: say "cancelled", not
                    // whatever their loss caused.
                    if r.is_err() && sigterm.recv().now_or_never().is_some() {
                        self.terminated = true;
                        r = Err(AgentError::Cancelled);
                    } else if r.is_err() && sigint.recv().now_or_never().is_some() {
                        r = Err(AgentError::Cancelled);
                    }
                    // Cancelled by SIGTERM: say so, and exit with 128 + 15.
                    if self.terminated && matches!(r, Err(AgentError::Cancelled)) {
                        r = Err(AgentError::Terminated);
                    }
                    break 'outer End::Job(Box::new(r));
                }
                if let Some((client, waited)) = &self.stopping
                    && self.hub.live_jobs().is_empty()
                {
                    break 'outer End::Stopped {
                        cancelled: Vec::new(),
                        finished: waited.clone(),
                        client: Some(*client),
                    };
                }
            }
            // Wait for something (or just let the other tasks run when there is more to do).
            enum Woke {
                /// SIGINT (false) or SIGTERM (true).
                Signal(bool),
                Shell(ShellEvent),
                Nothing,
            }
            let first = tokio::select! {
                biased;
                _ = sigint.recv() => Woke::Signal(false),
                _ = sigterm.recv() => Woke::Signal(true),
                e = ev_rx.recv() => e.map_or(Woke::Nothing, Woke::Shell),
                _ = tick.tick() => Woke::Nothing,
                _ = tokio::task::yield_now(), if more => Woke::Nothing,
            };
            self.hub.set_now(self.start.elapsed());
            let mut shell_events = Vec::new();
            match first {
                Woke::Signal(term) => {
                    if self.is_runtime() {
                        self.log.line("stopping on a signal");
                        let cancelled = self.hub.cancel_all(&mut out);
                        self.flush_sends(&mut out);
                        break 'outer End::Stopped {
                            cancelled,
                            finished: Vec::new(),
                            client: self.stopping.as_ref().map(|s| s.0),
                        };
                    }
                    self.terminated |= term;
                    self.log.line(if term {
                        "cancelled (SIGTERM)"
                    } else {
                        "cancelled (SIGINT)"
                    });
                    self.hub.cancel_all(&mut out);
                }
                Woke::Shell(sev) => shell_events.push(sev),
                Woke::Nothing => {}
            }
            while shell_events.len() < EVENT_BATCH {
                match ev_rx.try_recv() {
                    Ok(e) => shell_events.push(e),
                    Err(_) => break,
                }
            }
            let had_events = !shell_events.is_empty();
            for sev in shell_events {
                if let Some(end) = self.shell_event(sev, &mut out) {
                    break 'outer end;
                }
            }
            if (!self.restarts.is_empty() || !self.coming.is_empty()) && self.run_restarts() {
                more = true;
            }
            // Planned workers that will never join.
            if !join_over {
                for l in self.launched.iter_mut() {
                    let name = l.meta.name.clone();
                    if self.joined_names.contains(&name) || self.dead_names.contains(&name) {
                        continue;
                    }
                    if let Ok(Some(status)) = l.proc.try_wait() {
                        let how = pnet_launch::describe(status);
                        self.log
                            .line(&format!("worker `{name}` exited before joining: {how}"));
                        self.dead_before_join.insert(format!("`{name}` ({how})"));
                        self.dead_names.insert(name);
                    }
                }
                let settled = planned_names
                    .iter()
                    .all(|n| self.joined_names.contains(n) || self.dead_names.contains(n));
                let timeout = self.start.elapsed() >= self.options.join_timeout;
                if (settled
                    && !self.dead_before_join.is_empty()
                    && self.options.external_workers == 0)
                    || timeout
                {
                    join_over = true;
                    self.hub.join_timeout(&mut out);
                } else if settled && self.dead_before_join.is_empty() {
                    join_over = true;
                }
            }
            if join_over && self.deferred_job.is_some() && self.segments_ready() {
                if let Err(e) = self.start_deferred_job(&mut out).await {
                    break 'outer End::Job(Box::new(Err(e)));
                }
                more = true;
            }
            if had_events || !out.is_empty() {
                more = true;
            }
            if config.progress && last_progress.elapsed() >= self.log.progress_every() {
                last_progress = Instant::now();
                self.show_progress();
            }
        };
        self.log.clear_progress();
        let mut end = end;
        if !self.job_allocs.is_empty() {
            if let End::Job(r) = &end
                && r.is_ok()
                && let Err(e) = self.write_dumps().await
            {
                end = End::Job(Box::new(Err(e)));
            }
            self.free_job_allocs();
        }
        if let End::Job(r) = &end {
            match r.as_ref() {
                Ok(_) => self.log.line("the job ended"),
                Err(e) => self.log.line(&format!("the job failed: {e}")),
            }
        }
        // Stop the workers: Shutdown, then let the writers flush.
        let shutdown = encode(&AgentMsg::Shutdown);
        let mut writers = Vec::new();
        for (_, c) in self.conns.drain() {
            let _ = c.tx.send(shutdown.clone());
            drop(c.tx);
            writers.push(c.writer);
        }
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            for w in writers {
                let _ = w.await;
            }
        })
        .await;
        if !self.is_runtime() {
            // Let control clients receive their last answers.
            self.clients.clear();
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if let Some(t) = self.trace.take()
            && let Err(e) = t.finish()
        {
            self.log.line(&format!("cannot write the trace: {e}"));
        }
        if let Some(f) = &mut self.log.file {
            let _ = f.flush();
        }
        Ok(end)
    }

    /// Sends the hub's pending messages to workers (before leaving the loop).
    pub(super) fn flush_sends(&mut self, out: &mut Vec<HubCmd>) {
        for cmd in out.drain(..) {
            match cmd {
                HubCmd::Send { worker, msg } => {
                    if let Some(c) = self.conns.get(&worker) {
                        let _ = c.tx.send(encode(&msg));
                    }
                }
                HubCmd::Reply { client, reply } => self.send_reply(client, reply),
                HubCmd::Log(m) => self.log.line(&m),
                HubCmd::Trace(_) | HubCmd::TaskLog { .. } => {}
                HubCmd::Ended { job, result } => match result.as_ref() {
                    Ok(_) => self.log.line(&format!("job {job} ended")),
                    Err(e) => self.log.line(&format!("job {job} ended: {e}")),
                },
            }
        }
    }

    pub(super) fn shell_event(&mut self, sev: ShellEvent, out: &mut Vec<HubCmd>) -> Option<End> {
        match sev {
            ShellEvent::Joined {
                id,
                hello,
                capacity,
                defs_upto,
                tx,
                writer,
            } => {
                if let Some(t) = &mut self.trace {
                    let _ = t.worker(id, &hello.name);
                }
                let leaf = match capacity {
                    Some(c) => format!(", a leaf agent with capacity {c}"),
                    None => String::new(),
                };
                self.log.line(&format!(
                    "worker {id} `{}` connected from {} (pid {}){leaf}",
                    hello.name, hello.host, hello.pid
                ));
                self.joined_names.insert(hello.name.clone());
                self.lost_names.remove(&hello.name);
                self.conns.insert(
                    id,
                    Conn {
                        tx,
                        writer,
                        name: hello.name.clone(),
                    },
                );
                self.hub.worker_joined(id, &hello, defs_upto, out);
                if let Some(capacity) = capacity {
                    let msgs = vec![pnet_protocol::WorkerMsg::Capacity { capacity }];
                    self.hub.worker_msgs(id, msgs, out);
                }
            }
            ShellEvent::Refused { peer, reason } => {
                self.log
                    .line(&format!("refused a worker from {peer}: {reason}"));
            }
            ShellEvent::ClientRefused { reason } => {
                self.log
                    .line(&format!("refused a control client: {reason}"));
            }
            ShellEvent::Msgs { id, msgs } => self.hub.worker_msgs(id, msgs, out),
            ShellEvent::Lost { id, reason } => {
                if let Some(c) = self.conns.remove(&id) {
                    self.joined_names.remove(&c.name);
                    self.lost_names.insert(c.name.clone(), reason.clone());
                    let deadline = Instant::now() + LOST_EXIT_WAIT;
                    self.worker_gone(id, c.name, reason, deadline, out);
                }
            }
            ShellEvent::LostWait {
                id,
                name,
                reason,
                deadline,
            } => self.worker_gone(id, name, reason, deadline, out),
            ShellEvent::ClientOpened { client, tx } => {
                self.clients.insert(
                    client,
                    ClientConn {
                        tx,
                        runtime: self.is_runtime(),
                    },
                );
            }
            ShellEvent::Control { client, request } => {
                self.hub.job_control(0, client, request, out);
            }
            ShellEvent::Runtime { client, request } => {
                return self.runtime_request(client, request, out);
            }
            ShellEvent::ClientClosed { client } => {
                self.clients.remove(&client);
                self.hub.client_closed(client);
            }
            ShellEvent::MemReply { client, response } => self.reply_rt(client, *response),
        }
        None
    }

    pub(super) fn refresh_welcome_defs(&self) {
        if let Some(s) = &self.shared {
            let snapshot = self.hub.live_defs();
            *s.defs.lock().unwrap_or_else(|e| e.into_inner()) = snapshot;
        }
    }
}
