//! Access to the segments of other workers: a direct mapping on the same host, the memory
//! server otherwise.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::sync::Arc;

use pnet_protocol::Secret;

use crate::server::{Conn, ConnError};
use crate::sys::Mapping;
use crate::{MemError, Segment, SegmentInfo};

/// A peer segment's file, mapped.
struct PeerMap {
    info: SegmentInfo,
    /// (device, inode) of the file when mapped: a different file under the same path (a
    /// restarted worker) means the mapping is stale.
    file_id: (u64, u64),
    map: Mapping,
}

/// Access to other segments: maps the file of a segment on the same host (same
/// [`SegmentInfo::host`] as `own_host`; falls back to TCP when the file cannot be opened),
/// else talks to its server over TCP; caches mappings and connections.
pub struct Peers {
    own_host: String,
    own: Option<(u32, Arc<Segment>)>,
    secret: Secret,
    maps: HashMap<u32, PeerMap>,
    conns: HashMap<u32, Conn>,
}

impl std::fmt::Debug for Peers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peers")
            .field("own_host", &self.own_host)
            .field("own", &self.own.as_ref().map(|(id, _)| *id))
            .field("mapped", &self.maps.len())
            .field("connected", &self.conns.len())
            .finish()
    }
}

enum Via<'a> {
    Own(&'a Segment),
    Map(&'a Mapping),
    Tcp,
}

impl Peers {
    pub fn new(own_host: String, own: Option<(u32, Arc<Segment>)>, secret: Secret) -> Peers {
        Peers {
            own_host,
            own,
            secret,
            maps: HashMap::new(),
            conns: HashMap::new(),
        }
    }

    /// Copies `out.len()` bytes at `offset` of segment `seg` into `out`.
    pub fn read(&mut self, seg: &SegmentInfo, offset: u64, out: &mut [u8]) -> Result<(), MemError> {
        check_range(seg, offset, out.len())?;
        match self.via(seg) {
            Via::Own(s) => s.read_at(offset, out),
            Via::Map(m) => {
                if m.read(offset, out) {
                    Ok(())
                } else {
                    Err(outside(seg, offset, out.len()))
                }
            }
            Via::Tcp => self.tcp(seg, |c| c.read(offset, out)),
        }
    }

    /// Copies `data` to `offset` of segment `seg`.
    pub fn write(&mut self, seg: &SegmentInfo, offset: u64, data: &[u8]) -> Result<(), MemError> {
        check_range(seg, offset, data.len())?;
        match self.via(seg) {
            Via::Own(s) => s.write_at(offset, data),
            Via::Map(m) => {
                if m.write(offset, data) {
                    Ok(())
                } else {
                    Err(outside(seg, offset, data.len()))
                }
            }
            Via::Tcp => self.tcp(seg, |c| c.write(offset, data)),
        }
    }

    fn via(&mut self, seg: &SegmentInfo) -> Via<'_> {
        if let Some((id, own)) = &self.own
            && *id == seg.id
            && own.path().as_os_str() == seg.shm_path.as_str()
        {
            return Via::Own(own);
        }
        if seg.host != self.own_host || seg.shm_path.is_empty() {
            return Via::Tcp;
        }
        // A cached mapping is good while it is of the same segment and its file is still the
        // one under that path.
        let current = std::fs::metadata(&seg.shm_path)
            .ok()
            .map(|m| (m.dev(), m.ino()));
        let fresh = self
            .maps
            .get(&seg.id)
            .is_some_and(|p| p.info == *seg && Some(p.file_id) == current);
        if !fresh {
            self.maps.remove(&seg.id);
            match map_peer(seg) {
                Some(p) => {
                    self.maps.insert(seg.id, p);
                }
                None => return Via::Tcp,
            }
        }
        match self.maps.get(&seg.id) {
            Some(p) => Via::Map(&p.map),
            None => Via::Tcp,
        }
    }

    /// Runs `op` on the (cached) connection to `seg`'s server; a broken cached connection is
    /// replaced by a fresh one once.
    fn tcp(
        &mut self,
        seg: &SegmentInfo,
        mut op: impl FnMut(&mut Conn) -> Result<(), ConnError>,
    ) -> Result<(), MemError> {
        let who = || format!("segment {} (worker {}, {})", seg.id, seg.id, seg.server);
        let cached = self
            .conns
            .get(&seg.id)
            .is_some_and(|c| c.server == seg.server);
        if !cached {
            self.conns.remove(&seg.id);
        }
        for attempt in 0..2 {
            if !self.conns.contains_key(&seg.id) {
                let c = Conn::connect(&seg.server, &self.secret).map_err(|e| {
                    MemError::new(format!("Cannot reach {}: {}", who(), e.message()))
                })?;
                if c.size < seg.size {
                    return Err(MemError::new(format!(
                        "The memory server of {} serves {} bytes, the segment should have {}.",
                        who(),
                        c.size,
                        seg.size
                    )));
                }
                self.conns.insert(seg.id, c);
            }
            let Some(c) = self.conns.get_mut(&seg.id) else {
                continue;
            };
            match op(c) {
                Ok(()) => return Ok(()),
                Err(ConnError::Server(m)) => return Err(MemError::new(m)),
                Err(ConnError::Io(m)) => {
                    self.conns.remove(&seg.id);
                    if attempt == 1 || !cached {
                        return Err(MemError::new(m));
                    }
                }
            }
        }
        Err(MemError::new(format!("Cannot reach {}.", who())))
    }
}

fn check_range(seg: &SegmentInfo, offset: u64, len: usize) -> Result<(), MemError> {
    if offset
        .checked_add(len as u64)
        .is_some_and(|e| e <= seg.size)
    {
        Ok(())
    } else {
        Err(outside(seg, offset, len))
    }
}

fn outside(seg: &SegmentInfo, offset: u64, len: usize) -> MemError {
    MemError::new(format!(
        "The range of {len} bytes at offset {offset} is outside segment {} of {} bytes.",
        seg.id, seg.size
    ))
}

/// Maps a peer's segment file, `None` when it cannot (then the server is used).
fn map_peer(seg: &SegmentInfo) -> Option<PeerMap> {
    let len = usize::try_from(seg.size).ok()?;
    let file: File = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(&seg.shm_path)
        .ok()?;
    let meta = file.metadata().ok()?;
    // A shorter file would fault (SIGBUS) on access past its end.
    if !meta.is_file() || meta.len() < seg.size {
        return None;
    }
    let map = Mapping::shared_file(&file, len).ok()?;
    Some(PeerMap {
        info: seg.clone(),
        file_id: (meta.dev(), meta.ino()),
        map,
    })
}
