//! Fixtures for tests of the memory layer and of its users (the agent's memory plan): a
//! temporary directory and a world of segments with their servers on 127.0.0.1. Built for this
//! crate's tests and, behind the `testing` feature, for other crates' tests.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use pnet_protocol::Secret;

use crate::{BufferSpec, GlobalTable, Peers, Segment, SegmentInfo, Server};

/// A fresh directory under the system's temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new() -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "pnet-memory-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        // A crashed earlier run of the same pid may have left it behind.
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Default for TempDir {
    fn default() -> Self {
        TempDir::new()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `n` segments of `size` bytes (ids 1..=n), each with a server on 127.0.0.1, all on `host`.
pub struct World {
    /// Holds the segments' files; removed on drop.
    pub dir: TempDir,
    pub segs: Vec<Arc<Segment>>,
    pub servers: Vec<Server>,
    pub infos: Vec<SegmentInfo>,
    pub secret: Secret,
}

impl World {
    pub fn new(n: u32, size: u64, host: &str) -> World {
        let dir = TempDir::new();
        let secret = Secret::random().unwrap();
        let (mut segs, mut servers, mut infos) = (Vec::new(), Vec::new(), Vec::new());
        for id in 1..=n {
            let seg = Arc::new(Segment::create(dir.path(), &format!("seg-{id}"), size).unwrap());
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let server = Server::start(seg.clone(), l, secret.clone()).unwrap();
            infos.push(SegmentInfo {
                id,
                host: host.to_string(),
                shm_path: seg.path().to_string_lossy().into_owned(),
                server: server.addr().to_string(),
                size,
            });
            segs.push(seg);
            servers.push(server);
        }
        World {
            dir,
            segs,
            servers,
            infos,
            secret,
        }
    }

    /// The global table of the world's segments.
    pub fn table(&self) -> GlobalTable {
        let mut t = GlobalTable::new();
        for i in &self.infos {
            t.add_segment(i.clone());
        }
        t
    }

    /// Peers of a worker on `host` (no own segment).
    pub fn peers(&self, host: &str) -> Peers {
        Peers::new(host.to_string(), None, self.secret.clone())
    }
}

/// `n` bytes of a pattern that differs with `seed`.
pub fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ ((i >> 8) as u8))
        .collect()
}

/// A writable buffer `name` of `size` bytes aligned to `alignment`.
pub fn spec(name: &str, size: u64, alignment: u64) -> BufferSpec {
    BufferSpec {
        name: name.to_string(),
        size,
        alignment,
        read_only: false,
    }
}
