//! A worker's segment: a shared-memory file, mapped read-write and shared.

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::MemError;
use crate::sys::Mapping;

/// A shared-memory file (created with `O_CREAT|O_EXCL`, mode 0600, in `/dev/shm` or a given
/// directory), `ftruncate`d to its size and mapped `MAP_SHARED`; the file is unlinked on drop.
///
/// Like any `ftruncate`d file in a tmpfs, the pages are only allocated when first written.
/// Creation checks that the file system has the space free now; segments created side by
/// side and not yet written can still overcommit it together (that shows when writing).
pub struct Segment {
    path: PathBuf,
    size: u64,
    map: Mapping,
}

impl std::fmt::Debug for Segment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Segment")
            .field("path", &self.path)
            .field("size", &self.size)
            .finish()
    }
}

impl Segment {
    /// Creates `dir/name` of `size` bytes. The name must be a plain file name.
    pub fn create(dir: &Path, name: &str, size: u64) -> Result<Segment, MemError> {
        if name.is_empty()
            || name == "."
            || name == ".."
            || name.contains('/')
            || name.contains('\0')
        {
            return Err(MemError::new(format!(
                "The segment name `{name}` is not a plain file name."
            )));
        }
        let len = usize::try_from(size).map_err(|_| {
            MemError::new(format!(
                "A segment of {size} bytes does not fit the address space."
            ))
        })?;
        // The file's pages are only taken when first touched: check the space now, so that a
        // too small /dev/shm is an error here and not a SIGBUS in the middle of a transfer.
        if let Some(free) = crate::sys::free_bytes(dir)
            && free < size
        {
            return Err(MemError::new(format!(
                "Not enough space for a segment of {size} bytes in {}: {free} bytes are free \
                 (lower the topology's working memory or make that file system larger).",
                dir.display()
            )));
        }
        let path = dir.join(name);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC)
            .open(&path)
            .map_err(|e| {
                MemError::new(format!(
                    "Cannot create the segment file {}: {e}.",
                    path.display()
                ))
            })?;
        let cleanup = |e: String| {
            let _ = std::fs::remove_file(&path);
            MemError::new(e)
        };
        if let Err(e) = file.set_len(size) {
            return Err(cleanup(format!(
                "Cannot size the segment file {} to {size} bytes: {e}.",
                path.display()
            )));
        }
        let map = match Mapping::shared_file(&file, len) {
            Ok(m) => m,
            Err(e) => {
                return Err(cleanup(format!(
                    "Cannot map the segment file {} ({size} bytes): {e}.",
                    path.display()
                )));
            }
        };
        Ok(Segment { path, size, map })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// Copies bytes at `offset` into `out`.
    pub fn read_at(&self, offset: u64, out: &mut [u8]) -> Result<(), MemError> {
        if self.map.read(offset, out) {
            Ok(())
        } else {
            Err(self.out_of_bounds(offset, out.len()))
        }
    }

    /// Copies `data` to `offset`.
    pub fn write_at(&self, offset: u64, data: &[u8]) -> Result<(), MemError> {
        if self.map.write(offset, data) {
            Ok(())
        } else {
            Err(self.out_of_bounds(offset, data.len()))
        }
    }

    fn out_of_bounds(&self, offset: u64, len: usize) -> MemError {
        MemError::new(format!(
            "The range of {len} bytes at offset {offset} is outside the segment {} of {} bytes.",
            self.path.display(),
            self.size
        ))
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
