//! Memory I/O: the runtime's global memory for clients (allocate, free, write, read; the
//! transfers run on the [`MemIo`] thread so that the event loop never blocks), and
//! `run_job`'s `--alloc` allocations (made and filled once the workers' segments are there,
//! freed when the job ends).

use std::time::{Duration, Instant};

use pnet_memory::{RangePiece, read_pieces, write_pieces};

use super::{Shell, ShellEvent};
use crate::AgentError;
use crate::control::RtResponse;
use crate::hub::{Hub, HubCmd};
use crate::memory::{IoJob, MemIo};

impl Shell<'_> {
    /// Starts the memory I/O thread if it is not running.
    pub(super) fn memio(&mut self) -> Result<&MemIo, String> {
        if self.memio.is_none() {
            let secret = match &self.shared {
                Some(s) => s.secret.clone(),
                None => {
                    return Err("the runtime has no workers, so no global memory".into());
                }
            };
            let io = MemIo::start(pnet_topology::local_hostname(), secret)
                .map_err(|e| format!("cannot start the memory thread: {e}"))?;
            self.memio = Some(io);
        }
        self.memio
            .as_ref()
            .ok_or_else(|| "the memory thread is not running".to_string())
    }

    pub(super) fn submit_io(&mut self, job: IoJob) -> Result<(), String> {
        if self.memio()?.submit(job) {
            Ok(())
        } else {
            Err("the memory thread has stopped".into())
        }
    }

    /// Runs `f` on the memory I/O thread and waits for its result (the other tasks of the
    /// runtime go on meanwhile).
    pub(super) async fn io<T: Send + 'static>(
        &mut self,
        f: impl FnOnce(&mut pnet_memory::Peers) -> T + Send + 'static,
    ) -> Result<T, String> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.submit_io(Box::new(move |peers| {
            let _ = tx.send(f(peers));
        }))?;
        rx.await
            .map_err(|_| "the memory thread stopped during a transfer".to_string())
    }

    pub(super) fn mem_alloc(&mut self, size: u64) -> RtResponse {
        let r = self.hub.memory().lock().alloc(size);
        match r {
            Ok(handle) => {
                self.log.line(&format!(
                    "allocated {} of global memory: {handle}",
                    crate::memory::human_bytes(size)
                ));
                RtResponse::Allocated {
                    range: pnet_memory::range_value(&handle, 0, size),
                    handle,
                }
            }
            Err(e) => RtResponse::Error(alloc_error(&self.hub, &e)),
        }
    }

    /// `MemFree`.
    pub(super) fn mem_free(&mut self, handle: &str) -> RtResponse {
        match self.hub.memory().lock().free(handle) {
            Ok(()) => {
                self.log.line(&format!("freed global memory {handle}"));
                RtResponse::Ok
            }
            Err(e) => RtResponse::Error(e.message),
        }
    }

    /// `MemWrite`: the bytes go out on the memory I/O thread, which answers the client; an
    /// answer here only when the request fails at once.
    pub(super) fn mem_write(
        &mut self,
        client: u64,
        handle: String,
        offset: u64,
        data: Vec<u8>,
    ) -> Option<RtResponse> {
        let pieces = resolve_range(&self.hub, &handle, offset, data.len() as u64);
        match pieces {
            Err(e) => Some(RtResponse::Error(e)),
            Ok(pieces) => {
                let ev = self.ev_tx.clone();
                let job: IoJob = Box::new(move |peers| {
                    let response = match write_pieces(peers, &pieces, &data) {
                        Ok(()) => RtResponse::Ok,
                        Err(e) => RtResponse::Error(format!(
                            "cannot write {} bytes at offset {offset} of {handle}: {e}",
                            data.len()
                        )),
                    };
                    let _ = ev.send(ShellEvent::MemReply {
                        client,
                        response: Box::new(response),
                    });
                });
                match self.submit_io(job) {
                    Ok(()) => None,
                    Err(e) => Some(RtResponse::Error(e)),
                }
            }
        }
    }

    /// `MemRead`: the bytes are read on the memory I/O thread, which answers the client; an
    /// answer here only when the request fails at once.
    pub(super) fn mem_read(
        &mut self,
        client: u64,
        handle: String,
        offset: u64,
        size: u64,
    ) -> Option<RtResponse> {
        let most = pnet_protocol::frame::MAX_FRAME - 1024;
        let n = match usize::try_from(size) {
            Ok(n) if n <= most => Ok(n),
            _ => Err(format!(
                "cannot read {size} bytes in one request (at most {most}; clients read \
                 in chunks of {})",
                crate::memory::CLIENT_CHUNK
            )),
        };
        let pieces =
            n.and_then(|n| resolve_range(&self.hub, &handle, offset, size).map(|p| (n, p)));
        match pieces {
            Err(e) => Some(RtResponse::Error(e)),
            Ok((n, pieces)) => {
                let ev = self.ev_tx.clone();
                let job: IoJob = Box::new(move |peers| {
                    let mut buf = vec![0u8; n];
                    let response = match read_pieces(peers, &pieces, &mut buf) {
                        Ok(()) => RtResponse::Bytes(buf),
                        Err(e) => RtResponse::Error(format!(
                            "cannot read {size} bytes at offset {offset} of {handle}: {e}"
                        )),
                    };
                    let _ = ev.send(ShellEvent::MemReply {
                        client,
                        response: Box::new(response),
                    });
                });
                match self.submit_io(job) {
                    Ok(()) => None,
                    Err(e) => Some(RtResponse::Error(e)),
                }
            }
        }
    }

    /// Whether every joined worker started with working memory has reported its segment (or
    /// 10 s have passed since the joining was over).
    pub(super) fn segments_ready(&mut self) -> bool {
        let since = *self.segments_wait.get_or_insert_with(Instant::now);
        if since.elapsed() >= Duration::from_secs(10) {
            return true;
        }
        let table = self.hub.memory().lock();
        self.conns.iter().all(|(&id, c)| {
            let shm = self
                .launched
                .iter()
                .find(|l| l.meta.name == c.name)
                .map_or(0, |l| l.shm);
            shm == 0 || table.segment(id).is_some()
        })
    }

    /// Allocates and fills `run_job`'s global memory, binds the ports, and starts the job.
    pub(super) async fn start_deferred_job(
        &mut self,
        out: &mut Vec<HubCmd>,
    ) -> Result<(), AgentError> {
        let Some((bundle, mut inputs)) = self.deferred_job.take() else {
            return Ok(());
        };
        // The log lines so far first (the workers' segments), so that the log is in order.
        let log = &mut self.log;
        out.retain(|c| match c {
            HubCmd::Log(m) => {
                log.line(m);
                false
            }
            _ => true,
        });
        let allocs = std::mem::take(&mut self.options.allocs);
        for a in allocs {
            let what = match &a.data {
                Some(_) => format!("--alloc {}=@FILE", a.port),
                None => format!("--alloc {}={}", a.port, a.size),
            };
            let r = self.hub.memory().lock().alloc(a.size);
            let handle = r.map_err(|e| {
                AgentError::Setup(format!("{what}: {}", alloc_error(&self.hub, &e)))
            })?;
            self.job_allocs
                .push((a.port.clone(), handle.clone(), a.size));
            self.log.line(&format!(
                "allocated {} of global memory for port `{}`: {handle}",
                crate::memory::human_bytes(a.size),
                a.port
            ));
            if let Some(data) = a.data
                && !data.is_empty()
            {
                let pieces = resolve_range(&self.hub, &handle, 0, a.size)
                    .map_err(|e| AgentError::Setup(format!("{what}: {e}")))?;
                self.io(move |peers| write_pieces(peers, &pieces, &data))
                    .await
                    .map_err(|e| AgentError::Setup(format!("{what}: {e}")))?
                    .map_err(|e| AgentError::Setup(format!("{what}: cannot fill {handle}: {e}")))?;
            }
            let range = pnet_memory::range_value(&handle, 0, a.size);
            match inputs.iter_mut().find(|(p, _)| *p == a.port) {
                Some((_, vs)) => vs.push(range),
                None => inputs.push((a.port.clone(), vec![range])),
            }
        }
        self.hub.add_job("job", bundle, &inputs, out)?;
        self.refresh_welcome_defs();
        // The workers that were to join have joined (or never will).
        self.hub.join_timeout(out);
        Ok(())
    }

    pub(super) fn free_job_allocs(&mut self) {
        for (port, handle, _) in std::mem::take(&mut self.job_allocs) {
            if let Err(e) = self.hub.memory().lock().free(&handle) {
                self.log
                    .line(&format!("cannot free {handle} (port `{port}`): {e}"));
            }
        }
    }
}

/// The pieces of a global range, or the error as a message.
pub(super) fn resolve_range(
    hub: &Hub,
    handle: &str,
    offset: u64,
    len: u64,
) -> Result<Vec<RangePiece>, String> {
    let table = hub.memory().lock();
    if len == 0 {
        // Nothing to move; the handle and offset must still make sense.
        return match table.size_of(handle) {
            None => Err(format!("there is no allocation {handle}")),
            Some(size) if offset > size => Err(format!(
                "offset {offset} is past the end of {handle} ({size} bytes)"
            )),
            Some(_) => Ok(Vec::new()),
        };
    }
    pnet_memory::resolve(&table, handle, offset, len).map_err(|e| e.message)
}

/// An allocation error, with a hint when no worker offers working memory.
pub(super) fn alloc_error(hub: &Hub, e: &pnet_memory::MemError) -> String {
    if hub.memory().lock().stats().segments == 0 {
        format!(
            "{e} Give the workers working memory: a shm size in the topology, like \
             `worker:2,67108864` (64 MiB each)."
        )
    } else {
        e.to_string()
    }
}
