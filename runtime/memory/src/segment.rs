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

/// The folder of workers' segment files: `/dev/shm` when it exists, else the temporary
/// directory.
pub fn segment_dir() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

/// The file name of a worker's segment: `pnet-<pid>-<worker name>` (the name reduced to
/// letters, digits, `-`, `_` and `.`, at most 100 of them). A worker that finds a file of
/// that name already appends `-<8 hex digits>`. [`segment_owner`] reads the pid back.
pub fn segment_name(pid: u32, worker: &str) -> String {
    let clean: String = worker
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(100)
        .collect();
    format!("pnet-{pid}-{clean}")
}

/// The pid of the worker owning a segment file named by [`segment_name`], or `None` when the
/// name is not of that scheme.
pub fn segment_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("pnet-")?;
    let (pid, worker) = rest.split_once('-')?;
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) || worker.is_empty() {
        return None;
    }
    pid.parse().ok().filter(|p| *p > 0)
}

/// Whether process `pid` exists (in this pid namespace); a zombie counts as existing.
fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// The segment files in `dir` of process `pid` owned by this user.
fn files_of(dir: &Path, pid: Option<u32>) -> Vec<(PathBuf, u32)> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name();
            let owner = segment_owner(name.to_str()?)?;
            if pid.is_some_and(|p| p != owner) {
                return None;
            }
            // Not following links: only plain files of this user.
            let meta = e.path().symlink_metadata().ok()?;
            (meta.is_file() && meta.uid() == uid).then(|| (e.path(), owner))
        })
        .collect()
}

/// Removes the segment files of worker process `pid` (in [`segment_dir`], owned by this
/// user): for whoever started the worker, once it has exited (a worker killed with SIGKILL
/// cannot remove its own). Returns the files removed.
pub fn remove_segments_of(pid: u32) -> Vec<PathBuf> {
    remove_segments_in(&segment_dir(), Some(pid), false)
}

/// Removes the segment files (in [`segment_dir`], owned by this user) whose worker process
/// no longer exists: left by workers that were killed. Returns the files removed.
///
/// A process of another pid namespace sharing this `/dev/shm` looks dead from here; running
/// workers of the same user in two pid namespaces over one `/dev/shm` is not supported.
pub fn remove_stale_segments() -> Vec<PathBuf> {
    remove_segments_in(&segment_dir(), None, true)
}

/// [`remove_segments_of`] (`pid`, all pids when `None`) in `dir`; only those of processes
/// that no longer exist when `dead_only`.
pub fn remove_segments_in(dir: &Path, pid: Option<u32>, dead_only: bool) -> Vec<PathBuf> {
    files_of(dir, pid)
        .into_iter()
        .filter(|(_, owner)| !dead_only || !alive(*owner))
        .filter_map(|(path, _)| std::fs::remove_file(&path).is_ok().then_some(path))
        .collect()
}
