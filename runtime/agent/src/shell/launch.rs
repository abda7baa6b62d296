//! Launching: starting the workers of a plan through `pnet-launch` (the secret on their
//! stdin), restarting lost local workers, adding and removing workers of a runtime, and
//! stopping them all at the end (Shutdown, then `stop_all` with a grace period).

use std::time::{Duration, Instant};

use pnet_launch::{Launched, WorkerCommand};
use pnet_protocol::AgentMsg;
use pnet_protocol::frame::encode;
use pnet_topology::PlannedWorker;

use super::workers::NO_HEARTBEAT;
use super::{Shell, ShellEvent};
use crate::AgentError;
use crate::control::{RtResponse, WorkerRef};
use crate::hub::HubCmd;

/// How long a lost local worker's process is waited for, to name how it ended.
pub(super) const LOST_EXIT_WAIT: Duration = Duration::from_millis(500);

/// A worker process started by this runtime.
pub(super) struct LaunchedWorker {
    pub(super) meta: WorkerRef,
    pub(super) class: String,
    /// Bytes of working memory (`--shm`).
    pub(super) shm: u64,
    pub(super) proc: Launched,
    /// What it was started from (to start it again when it is lost).
    pub(super) planned: PlannedWorker,
    /// How often it was restarted after being lost.
    pub(super) restarts: u32,
}

/// A lost worker to start again.
pub(super) struct Restart {
    pub(super) due: Instant,
    /// Its plan, named as it was (so it comes back under its name).
    pub(super) planned: PlannedWorker,
    pub(super) restarts: u32,
}

/// How often a lost local worker is started again (also by a leaf agent: `leaf.rs`).
pub(super) const MAX_RESTARTS: u32 = 3;

/// The wait before its first restart (doubled for each further one).
const RESTART_BACKOFF: Duration = Duration::from_millis(200);

/// The wait before restarting a worker restarted `restarts` times already
/// ([`RESTART_BACKOFF`] doubled per restart); `None` when it was restarted [`MAX_RESTARTS`]
/// times (the policy of the root's workers and of a leaf agent's: `leaf.rs`).
pub(super) fn restart_delay(restarts: u32) -> Option<Duration> {
    (restarts < MAX_RESTARTS).then(|| RESTART_BACKOFF * 2u32.pow(restarts))
}

impl Shell<'_> {
    /// Stops the launched workers (after the loop, outside the tokio runtime).
    pub(super) fn stop_launched(&mut self, grace: Duration) -> Vec<(String, String)> {
        if self.launched.is_empty() {
            return Vec::new();
        }
        let local = matches!(self.config.launcher, pnet_launch::Launcher::Local);
        let pids: Vec<u32> = (self.launched.iter())
            .filter(|l| local && l.shm > 0)
            .filter_map(|l| l.meta.pid)
            .collect();
        let mut procs: Vec<Launched> = self.launched.drain(..).map(|l| l.proc).collect();
        let ended = pnet_launch::stop_all(&mut procs, grace);
        // The segments of workers that could not remove theirs (killed ones).
        for pid in pids {
            pnet_memory::remove_segments_of(pid);
        }
        ended
    }

    /// A worker's connection is gone: tell the hub (which requeues its tasks), with how its
    /// process ended when it is one this agent started. Its connection may close just before
    /// the process is gone, so a process that still runs is looked at again every 5 ms until
    /// `deadline` through a `ShellEvent::LostWait`, without blocking the event loop (other
    /// workers' results and clients keep being served meanwhile). A worker lost for its
    /// silence is hung or out of reach (a host cut off or frozen): its process does not end
    /// by itself, so it is not waited for, and its tasks are queued again at once.
    pub(super) fn worker_gone(
        &mut self,
        id: u32,
        name: String,
        reason: String,
        deadline: Instant,
        out: &mut Vec<HubCmd>,
    ) {
        let exit = match self.launched.iter_mut().find(|l| l.meta.name == name) {
            None => None,
            Some(l) => match l.proc.try_wait() {
                Ok(Some(status)) => Some(pnet_launch::exit_name(status)),
                Ok(None) if Instant::now() < deadline && !reason.ends_with(NO_HEARTBEAT) => {
                    let ev = self.ev_tx.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        let _ = ev.send(ShellEvent::LostWait {
                            id,
                            name,
                            reason,
                            deadline,
                        });
                    });
                    return;
                }
                _ => None,
            },
        };
        self.hub.worker_lost(id, &reason, exit.as_deref(), out);
        self.remove_segments_if_exited(&name);
        self.restart_later(&name, exit.as_deref().unwrap_or(&reason));
    }

    /// A local worker this agent started was lost and has ended: start it again after a
    /// back-off (`RESTART_BACKOFF` doubled per restart), at most `MAX_RESTARTS` times, so
    /// that the runtime keeps its capacity. Jobs wait for it meanwhile.
    pub(super) fn restart_later(&mut self, name: &str, how: &str) {
        if !matches!(self.config.launcher, pnet_launch::Launcher::Local) {
            return;
        }
        let Some(k) = self.launched.iter().position(|l| l.meta.name == name) else {
            return;
        };
        if !matches!(self.launched[k].proc.try_wait(), Ok(Some(_))) {
            return;
        }
        let l = self.launched.swap_remove(k);
        let Some(delay) = restart_delay(l.restarts) else {
            self.log.line(&format!(
                "worker `{name}` ended ({how}); not restarted: it was restarted {MAX_RESTARTS} \
                 times already"
            ));
            return;
        };
        self.log.line(&format!(
            "worker `{name}` ended ({how}); restarting it in {} ms (restart {} of {MAX_RESTARTS})",
            delay.as_millis(),
            l.restarts + 1
        ));
        let mut planned = l.planned;
        planned.name = name.to_string();
        self.restarts.push(Restart {
            due: Instant::now() + delay,
            planned,
            restarts: l.restarts + 1,
        });
        self.update_workers_coming();
    }

    /// Starts the restarts that are due; forgets restarted workers that joined or ended.
    /// Returns whether the jobs should look again (the number of workers coming changed).
    pub(super) fn run_restarts(&mut self) -> bool {
        let now = Instant::now();
        let mut changed = false;
        let due: Vec<Restart> = {
            let (due, later) = std::mem::take(&mut self.restarts)
                .into_iter()
                .partition(|r| r.due <= now);
            self.restarts = later;
            due
        };
        for r in due {
            changed = true;
            match self.launch(std::slice::from_ref(&r.planned)) {
                Ok(started) => {
                    if let Some(l) = self.launched.last_mut() {
                        l.restarts = r.restarts;
                    }
                    self.coming.extend(started.into_iter().map(|w| w.name));
                }
                Err(e) => self
                    .log
                    .line(&format!("cannot restart worker `{}`: {e}", r.planned.name)),
            }
        }
        // Restarted workers that joined, or ended before joining.
        let mut settled = Vec::new();
        for name in &self.coming {
            if self.joined_names.contains(name) {
                settled.push((name.clone(), None));
            } else if let Some(l) = self.launched.iter_mut().find(|l| &l.meta.name == name)
                && let Ok(Some(status)) = l.proc.try_wait()
            {
                settled.push((name.clone(), Some(pnet_launch::describe(status))));
            }
        }
        for (name, how) in settled {
            changed = true;
            self.coming.remove(&name);
            if let Some(how) = how {
                self.log
                    .line(&format!("restarted worker `{name}` {how} before joining"));
                self.restart_later(&name, &how);
            }
        }
        if changed {
            self.update_workers_coming();
        }
        changed
    }

    pub(super) fn update_workers_coming(&mut self) {
        let n = self.restarts.len() + self.coming.len();
        self.hub.set_workers_coming(n);
    }

    /// Removes the segment files of launched local worker `name` if it has exited (a worker
    /// killed with SIGKILL leaves its segment behind).
    pub(super) fn remove_segments_if_exited(&mut self, name: &str) {
        let local = matches!(self.config.launcher, pnet_launch::Launcher::Local);
        if let Some(l) = self.launched.iter_mut().find(|l| l.meta.name == name)
            && local
            && l.shm > 0
            && let Some(pid) = l.meta.pid
            && matches!(l.proc.try_wait(), Ok(Some(_)))
        {
            pnet_memory::remove_segments_of(pid);
        }
    }

    /// Starts the workers of a plan; returns the ones started (names made unique).
    pub(super) fn launch(
        &mut self,
        workers: &[PlannedWorker],
    ) -> Result<Vec<WorkerRef>, AgentError> {
        let Some(shared) = self.shared.clone() else {
            return Err(AgentError::Setup(
                "the runtime does not listen for workers".into(),
            ));
        };
        let config = self.config;
        let mut started = Vec::new();
        for w in workers {
            let mut name = w.name.clone();
            let taken = |n: &str, s: &Shell<'_>| {
                s.launched.iter().any(|l| l.meta.name == n) || s.conns.values().any(|c| c.name == n)
            };
            let mut k = w.index_on_host;
            while taken(&name, self) {
                k += 1;
                name = format!("{}-{}-{k}", w.class, w.host);
            }
            let mut args = vec![
                "--agent".to_string(),
                self.agent_addr.clone(),
                "--name".to_string(),
                name.clone(),
            ];
            if !w.capabilities.is_empty() {
                args.push("--capabilities".into());
                args.push(w.capabilities.join(","));
            }
            if let Some(s) = w.socket {
                args.push("--socket".into());
                args.push(s.to_string());
            }
            if w.shm > 0 {
                args.push("--shm".into());
                args.push(w.shm.to_string());
            }
            if config.fake_hosts > 0 {
                args.push("--host-id".into());
                args.push(format!(
                    "local-{}",
                    self.launch_count % u64::from(config.fake_hosts)
                ));
            }
            self.launch_count += 1;
            if config.isolate_modules {
                args.push("--isolate-modules".into());
            }
            args.push("--secret-stdin".into());
            args.push("--exit-on-stdin-eof".into());
            let cmd = WorkerCommand {
                name: name.clone(),
                host: w.host.clone(),
                program: config.worker_program.clone(),
                args,
                env: Vec::new(),
                stdin: Some(format!("{}\n", shared.secret.to_hex()).into_bytes()),
                log: None,
            };
            match pnet_launch::launch(&config.launcher, &cmd) {
                Ok(l) => {
                    self.log.line(&format!(
                        "started worker `{}` on `{}` ({}, pid {})",
                        name,
                        w.host,
                        config.launcher.name(),
                        l.pid().map_or("?".into(), |p| p.to_string())
                    ));
                    let meta = WorkerRef {
                        name: name.clone(),
                        host: w.host.clone(),
                        pid: l.pid(),
                    };
                    started.push(meta.clone());
                    self.launched.push(LaunchedWorker {
                        meta,
                        class: w.class.clone(),
                        shm: w.shm,
                        proc: l,
                        planned: w.clone(),
                        restarts: 0,
                    });
                }
                Err(e) => {
                    return Err(AgentError::Setup(format!(
                        "cannot start worker `{}` on `{}` through the {} launcher ({}): {e}",
                        name,
                        w.host,
                        config.launcher.name(),
                        config.worker_program.display()
                    )));
                }
            }
        }
        Ok(started)
    }

    pub(super) fn add_workers(&mut self, topology: &str, hosts: Vec<String>) -> RtResponse {
        let (topo, diags) = pnet_topology::parse_topology(topology);
        if pnet_topology::has_errors(&diags) {
            let errors: Vec<pnet_topology::Diagnostic> =
                diags.into_iter().filter(|d| d.is_error()).collect();
            // At most 50 shown, then "and K more".
            let file = pnet_diagnostics::RenderFile {
                name: "topology",
                text: topology,
            };
            let text = pnet_diagnostics::render::render_short(&file, &errors);
            return RtResponse::Error(text.trim_end().to_string());
        }
        let hosts = if hosts.is_empty() {
            if self.config.plan.hosts.is_empty() {
                vec![pnet_topology::local_hostname()]
            } else {
                self.config.plan.hosts.clone()
            }
        } else {
            hosts
        };
        let plan = pnet_topology::plan(&topo, &hosts);
        match self.launch(&plan.workers) {
            Ok(started) => RtResponse::Workers(started),
            Err(e) => RtResponse::Error(e.to_string()),
        }
    }

    pub(super) fn remove_workers(
        &mut self,
        names: &[String],
        class: Option<&str>,
        count: Option<u32>,
        out: &mut Vec<HubCmd>,
    ) -> RtResponse {
        // Candidates: every launched or joined worker, by name.
        let mut known: Vec<(String, String, u32)> = Vec::new(); // (name, class, in flight)
        let status = self.hub.worker_status();
        for l in &self.launched {
            let busy = status
                .iter()
                .find(|(_, w)| w.name == l.meta.name)
                .map_or(0, |(_, w)| w.in_flight);
            known.push((l.meta.name.clone(), l.class.clone(), busy));
        }
        for (_, w) in &status {
            if !known.iter().any(|k| k.0 == w.name) {
                let class = w.capabilities.first().cloned().unwrap_or_default();
                known.push((w.name.clone(), class, w.in_flight));
            }
        }
        let mut targets: Vec<String> = Vec::new();
        for n in names {
            if !known.iter().any(|k| &k.0 == n) {
                let mut all: Vec<&str> = known.iter().map(|k| k.0.as_str()).collect();
                all.sort_unstable();
                return RtResponse::Error(format!(
                    "there is no worker `{n}`; the workers are: {}",
                    if all.is_empty() {
                        "(none)".to_string()
                    } else {
                        all.join(", ")
                    }
                ));
            }
            if !targets.contains(n) {
                targets.push(n.clone());
            }
        }
        if let Some(c) = class {
            let mut of: Vec<&(String, String, u32)> = known
                .iter()
                .filter(|k| k.1 == c && !targets.contains(&k.0))
                .collect();
            if of.is_empty() && targets.is_empty() {
                return RtResponse::Error(format!("there is no worker of class `{c}`"));
            }
            // Idle ones first.
            of.sort_by(|a, b| a.2.cmp(&b.2).then_with(|| b.0.cmp(&a.0)));
            let n = count.map_or(of.len(), |n| (n as usize).min(of.len()));
            targets.extend(of.into_iter().take(n).map(|k| k.0.clone()));
        }
        let mut removed = Vec::new();
        for name in targets {
            let ids: Vec<u32> = self
                .conns
                .iter()
                .filter(|(_, c)| c.name == name)
                .map(|(&id, _)| id)
                .collect();
            // A leaf agent stops its workers: they are named after it, `LEAF/WORKER`, as
            // `gspc stop` names them.
            let under: Vec<WorkerRef> = (ids.iter())
                .filter_map(|id| self.hub.workers().get(id))
                .flat_map(|w| w.under_refs())
                .collect();
            for id in ids {
                if let Some(c) = self.conns.remove(&id) {
                    let _ = c.tx.send(encode(&AgentMsg::Shutdown));
                    self.joined_names.remove(&name);
                    if let Some(shared) = &self.shared {
                        shared.forget_leaf(&name);
                    }
                    self.hub
                        .worker_lost(id, "removed by `gspc remove-workers`", None, out);
                }
            }
            let mut r = WorkerRef {
                name: name.clone(),
                host: String::new(),
                pid: None,
            };
            if let Some(k) = self.launched.iter().position(|l| l.meta.name == name) {
                let l = self.launched.swap_remove(k);
                r = l.meta.clone();
                let grace = self.options.stop_grace;
                let mut proc = l.proc;
                let local = matches!(self.config.launcher, pnet_launch::Launcher::Local);
                let pid = l.meta.pid.filter(|_| local && l.shm > 0);
                self.removals.push(std::thread::spawn(move || {
                    let _ = pnet_launch::stop_all(std::slice::from_mut(&mut proc), grace);
                    if let Some(pid) = pid {
                        pnet_memory::remove_segments_of(pid);
                    }
                }));
            } else if let Some((_, w)) = status.iter().find(|(_, w)| w.name == name) {
                r.host = w.host.clone();
                r.pid = w.pid;
            }
            self.lost_names.remove(&name);
            self.log.line(&format!("worker `{name}` removed"));
            removed.push(r);
            removed.extend(under);
        }
        RtResponse::Workers(removed)
    }
}
