//! Dumps: `run_job`'s `--dump PORT=FILE`, the bytes of the job's allocations written to
//! files after the job.

use pnet_memory::read_pieces;

use super::Shell;
use super::memory_io::resolve_range;
use crate::AgentError;

impl Shell<'_> {
    /// `--dump PORT=FILE`: writes the bytes of the allocations to their files.
    pub(super) async fn write_dumps(&mut self) -> Result<(), AgentError> {
        let dumps = std::mem::take(&mut self.options.dumps);
        for (port, path) in dumps {
            let what = format!("--dump {port}={}", path.display());
            let Some((_, handle, size)) =
                self.job_allocs.iter().find(|(p, ..)| *p == port).cloned()
            else {
                return Err(AgentError::Setup(format!(
                    "{what}: no --alloc for port `{port}`"
                )));
            };
            let n = usize::try_from(size)
                .map_err(|_| AgentError::Setup(format!("{what}: {size} bytes are too many")))?;
            let pieces = resolve_range(&self.hub, &handle, 0, size)
                .map_err(|e| AgentError::Setup(format!("{what}: {e}")))?;
            let bytes = self
                .io(move |peers| {
                    let mut buf = vec![0u8; n];
                    read_pieces(peers, &pieces, &mut buf).map(|()| buf)
                })
                .await
                .map_err(|e| AgentError::Setup(format!("{what}: {e}")))?
                .map_err(|e| AgentError::Setup(format!("{what}: cannot read {handle}: {e}")))?;
            std::fs::write(&path, &bytes).map_err(|e| {
                AgentError::Setup(format!("{what}: cannot write {}: {e}", path.display()))
            })?;
            self.log.line(&format!(
                "wrote {} of {handle} (port `{port}`) to {}",
                crate::memory::human_bytes(size),
                path.display()
            ));
        }
        Ok(())
    }
}
