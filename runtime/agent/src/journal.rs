//! The journal of a persistent runtime's jobs (`gspc`): what a runtime needs to bring its
//! jobs back after a crash (`gspc boot --resume`). See `runtime/agent/JOURNAL.md` for the
//! design; in short:
//!
//! - a job is its bundle and inputs ([`Record::Submit`]) plus the operations that changed
//!   its engine from outside ([`Op`]: a task's result, a discarded task, a token put, a
//!   response asked for, a close), each with the engine's firing count at that moment;
//!   firing is deterministic, so replaying them in order (firing up to each count first)
//!   gives the engine back ([`crate::core::Core::replay`]); the tasks handed out and not
//!   answered are queued again;
//! - an ended job is its outcome ([`Record::End`]), kept for `gspc wait` and `gspc jobs`.
//!
//! The file (`STATE_DIR/journal`) is a header (magic, version) and records, each
//! `length (u32 LE) | CRC-32 of the payload (u32 LE) | payload (postcard)`. A torn or
//! corrupt last record (a crash in the middle of a write) is cut off at resume.
//!
//! Writing: the hub appends records to a bounded buffer in memory; a writer thread writes the
//! buffer out every [`WRITE_EVERY`] (or when it holds [`WAKE_AT`] bytes) and calls
//! `fdatasync` every [`SYNC_EVERY`]. A crash of the runtime (SIGKILL) loses at most what was
//! not yet written (the last few milliseconds); a crash of the machine at most the last
//! [`SYNC_EVERY`]. Both lose a suffix only: the jobs come back at an earlier consistent state
//! and the tasks whose results were lost run again.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{Read as _, Write as _};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pnet_stdlib::Value;
use serde::{Deserialize, Serialize};

use crate::control::JobOutcome;
use crate::hub::{Hub, JobId};

/// The journal's file name in the state directory.
pub const JOURNAL_FILE: &str = "journal";
/// The first bytes of a journal.
pub const MAGIC: &[u8; 8] = b"GSPCJRNL";
/// The format version this runtime writes and reads.
pub const VERSION: u32 = 1;
/// The writer writes what is buffered at least this often.
pub const WRITE_EVERY: Duration = Duration::from_millis(5);
/// The writer is woken early when this many bytes are buffered.
pub const WAKE_AT: usize = 256 << 10;
/// The hub waits for the writer when this many bytes are buffered (the bound).
pub const MAX_BUFFERED: usize = 64 << 20;
/// The writer calls `fdatasync` at most this often (and when it stops).
pub const SYNC_EVERY: Duration = Duration::from_millis(200);
/// With no job running, a journal that grew by this many bytes is rewritten as the ended
/// jobs' outcomes.
pub const COMPACT_AT: u64 = 64 << 20;
/// The largest record read back (a bundle with its inputs).
const MAX_RECORD: u32 = 1 << 30;

/// Something that changed a job's engine from outside.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// A task's result (its outputs in the order of its function's out ports).
    Done {
        task: u64,
        transition: String,
        outputs: Vec<Value>,
    },
    /// A task dropped without outputs (a eureka).
    Discard { task: u64 },
    /// A client's token on a `put_token` place.
    Put { place: String, value: Value },
    /// A client's workflow-response request.
    Response { place: String, value: Value },
    /// A client said that no more tokens will come.
    Close,
}

impl Op {
    /// Its kind, for messages.
    pub fn what(&self) -> &'static str {
        match self {
            Op::Done { .. } => "a task's result",
            Op::Discard { .. } => "a discarded task",
            Op::Put { .. } => "a token put",
            Op::Response { .. } => "a response request",
            Op::Close => "a close",
        }
    }
}

/// A record of the journal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Record {
    /// A job was submitted.
    Submit {
        job: JobId,
        net: String,
        /// The bundle, encoded ([`pnet_bundle::format::encode`]).
        bundle: Vec<u8>,
        inputs: Vec<(String, Vec<Value>)>,
        module_path: Vec<String>,
        submitted_unix: u64,
        /// The engine's seed.
        seed: u64,
    },
    /// A job was named.
    Name { job: JobId, name: String },
    /// An operation on a job's engine, at the engine's firing count `firings`.
    Op { job: JobId, firings: u64, op: Op },
    /// A job ended.
    End {
        job: JobId,
        outcome: JobOutcome,
        tasks_done: u64,
        elapsed_ms: u64,
    },
    /// An ended job as a rewritten journal keeps it (its submission and end in one).
    Ended {
        job: JobId,
        net: String,
        name: Option<String>,
        submitted_unix: u64,
        outcome: JobOutcome,
        tasks_done: u64,
        elapsed_ms: u64,
    },
}

/// Appends one framed record to `buf`.
pub fn encode_record(rec: &Record, buf: &mut Vec<u8>) {
    let at = buf.len();
    buf.extend_from_slice(&[0; 8]);
    let mut buf2 = std::mem::take(buf);
    buf2 = postcard::to_extend(rec, buf2).expect("journal records always serialize");
    *buf = buf2;
    let len = (buf.len() - at - 8) as u32;
    let crc = crc32fast::hash(&buf[at + 8..]);
    buf[at..at + 4].copy_from_slice(&len.to_le_bytes());
    buf[at + 4..at + 8].copy_from_slice(&crc.to_le_bytes());
}

/// The header of a journal.
pub fn header() -> Vec<u8> {
    let mut h = MAGIC.to_vec();
    h.extend_from_slice(&VERSION.to_le_bytes());
    h
}

/// What [`read`] found.
#[derive(Debug)]
pub struct Contents {
    pub records: Vec<Record>,
    /// The bytes up to the end of the last good record.
    pub valid_len: u64,
    /// Why the bytes after `valid_len` were not read (a torn or corrupt tail), and how many.
    pub torn: Option<(String, u64)>,
}

/// Reads a journal's bytes; an error for a file that is no journal of this version.
pub fn parse(bytes: &[u8]) -> Result<Contents, String> {
    const FRESH: &str = "boot without --resume to start a new journal (this file is then kept \
                         as journal.old)";
    if bytes.is_empty() {
        return Err(format!(
            "it is empty (its runtime wrote nothing to it: a full disk?); {FRESH}"
        ));
    }
    if bytes.len() < 12 && MAGIC.starts_with(&bytes[..bytes.len().min(8)]) {
        return Err(format!(
            "its header is cut short ({} bytes; its runtime wrote nothing more: a full \
             disk?); {FRESH}",
            bytes.len()
        ));
    }
    if bytes.len() < 12 || &bytes[..8] != MAGIC {
        return Err(format!(
            "it is not a gspc journal (no GSPCJRNL header); {FRESH}"
        ));
    }
    let v = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if v != VERSION {
        return Err(format!(
            "it is a journal of format version {v}; this gspc reads version {VERSION} \
             (resume with the gspc that wrote it)"
        ));
    }
    let mut at = 12usize;
    let mut records = Vec::new();
    let torn = loop {
        let rest = &bytes[at..];
        if rest.is_empty() {
            break None;
        }
        if rest.len() < 8 {
            break Some("a record header cut short".to_string());
        }
        let len = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes"));
        let crc = u32::from_le_bytes(rest[4..8].try_into().expect("4 bytes"));
        if len > MAX_RECORD || rest.len() - 8 < len as usize {
            break Some(format!("a record of {len} bytes cut short"));
        }
        let payload = &rest[8..8 + len as usize];
        if crc32fast::hash(payload) != crc {
            break Some("a record with a wrong checksum".to_string());
        }
        match postcard::from_bytes::<Record>(payload) {
            Ok(r) => records.push(r),
            Err(e) => break Some(format!("a record that does not decode ({e})")),
        }
        at += 8 + len as usize;
    };
    Ok(Contents {
        records,
        valid_len: at as u64,
        torn: torn.map(|w| (w, (bytes.len() - at) as u64)),
    })
}

struct Buffer {
    data: Vec<u8>,
    /// Bytes appended since the journal was created.
    appended: u64,
    closed: bool,
    error: Option<String>,
}

struct Shared {
    buf: Mutex<Buffer>,
    /// Wakes the writer.
    wake: Condvar,
    /// Wakes a hub waiting for room.
    room: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Buffer> {
        self.buf.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The journal being written (see the module's documentation).
pub struct Journal {
    shared: Arc<Shared>,
    compact_at: u64,
    writer: Option<JoinHandle<()>>,
    path: PathBuf,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Journal {
    /// Writes a new journal at `path` holding `records` (through a temporary file renamed
    /// over it, synced), and starts its writer.
    pub fn create(path: &Path, records: &[Record]) -> std::io::Result<Journal> {
        let tmp = path.with_extension("new");
        let mut bytes = header();
        for r in records {
            encode_record(r, &mut bytes);
        }
        {
            let mut f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(&bytes)?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, path)?;
        if let Some(dir) = path.parent()
            && let Ok(d) = File::open(dir)
        {
            let _ = d.sync_all();
        }
        let file = OpenOptions::new().append(true).open(path)?;
        let shared = Arc::new(Shared {
            buf: Mutex::new(Buffer {
                data: Vec::with_capacity(WAKE_AT * 2),
                appended: 0,
                closed: false,
                error: None,
            }),
            wake: Condvar::new(),
            room: Condvar::new(),
        });
        let s = shared.clone();
        let writer = std::thread::Builder::new()
            .name("journal".into())
            .spawn(move || write_loop(&s, file))?;
        Ok(Journal {
            shared,
            compact_at: COMPACT_AT,
            writer: Some(writer),
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends records (waits while the buffer is full).
    pub fn append(&self, records: impl IntoIterator<Item = Record>) {
        let mut b = self.shared.lock();
        while b.data.len() >= MAX_BUFFERED && b.error.is_none() {
            self.shared.wake.notify_one();
            b = self.shared.room.wait(b).unwrap_or_else(|e| e.into_inner());
        }
        if b.error.is_some() {
            return;
        }
        let before = b.data.len();
        for r in records {
            encode_record(&r, &mut b.data);
        }
        b.appended += (b.data.len() - before) as u64;
        if b.data.len() >= WAKE_AT {
            self.shared.wake.notify_one();
        }
    }

    /// Writes and syncs what is buffered, and waits for it.
    pub fn flush(&self) {
        let mut b = self.shared.lock();
        self.shared.wake.notify_one();
        while !b.data.is_empty() && b.error.is_none() {
            b = self.shared.room.wait(b).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// With no job running, the hub rewrites a journal that grew by this many bytes
    /// (default [`COMPACT_AT`]).
    pub fn compact_at(&self) -> u64 {
        self.compact_at
    }

    pub fn set_compact_at(&mut self, bytes: u64) {
        self.compact_at = bytes;
    }

    /// Bytes appended since the journal was created.
    pub fn appended(&self) -> u64 {
        self.shared.lock().appended
    }

    /// The writer's error, if writing failed (the journal stops then).
    pub fn error(&self) -> Option<String> {
        self.shared.lock().error.clone()
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.wake.notify_one();
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

fn write_loop(s: &Shared, mut file: File) {
    let mut out = Vec::with_capacity(WAKE_AT * 2);
    let mut last_sync = Instant::now();
    let mut dirty = false;
    loop {
        let closed = {
            let mut b = s.lock();
            if b.data.is_empty() && !b.closed {
                b = s
                    .wake
                    .wait_timeout(b, WRITE_EVERY)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
            std::mem::swap(&mut out, &mut b.data);
            b.closed
        };
        if !out.is_empty() {
            if let Err(e) = file.write_all(&out) {
                let mut b = s.lock();
                b.error = Some(e.to_string());
                b.data.clear();
                drop(b);
                s.room.notify_all();
                eprintln!("journal: cannot write: {e}; the journal stops here");
                return;
            }
            out.clear();
            dirty = true;
        }
        if dirty && (closed || last_sync.elapsed() >= SYNC_EVERY) {
            let _ = file.sync_data();
            last_sync = Instant::now();
            dirty = false;
        }
        s.room.notify_all();
        if closed && s.lock().data.is_empty() {
            return;
        }
    }
}

/// A job as the journal holds it.
#[derive(Debug, Default)]
pub struct JobEntry {
    pub submit: Option<Record>,
    pub name: Option<String>,
    pub ops: Vec<(u64, Op)>,
    /// `Record::End` or `Record::Ended`.
    pub end: Option<Record>,
}

/// The journal's records by job.
pub fn by_job(records: Vec<Record>) -> BTreeMap<JobId, JobEntry> {
    let mut jobs: BTreeMap<JobId, JobEntry> = BTreeMap::new();
    for r in records {
        match r {
            Record::Submit { job, .. } => jobs.entry(job).or_default().submit = Some(r),
            Record::Name { job, name } => jobs.entry(job).or_default().name = Some(name),
            Record::Op { job, firings, op } => jobs.entry(job).or_default().ops.push((firings, op)),
            Record::End { job, .. } | Record::Ended { job, .. } => {
                jobs.entry(job).or_default().end = Some(r)
            }
        }
    }
    jobs
}

/// What a resume brought back.
#[derive(Debug, Default)]
pub struct Resumed {
    /// The jobs running again.
    pub live: Vec<JobId>,
    /// The ended jobs kept.
    pub ended: usize,
    /// Jobs that could not be brought back (they are failed), with why.
    pub failed: Vec<(JobId, String)>,
    /// The torn tail cut off (why, bytes).
    pub torn: Option<(String, u64)>,
}

impl Resumed {
    /// `resumed 2 job(s) (1, 3), 1 ended job(s) kept` (the daemon's log, `gspc boot`).
    pub fn summary(&self) -> String {
        let live = if self.live.is_empty() {
            "resumed no job".to_string()
        } else {
            format!(
                "resumed {} job(s) ({})",
                self.live.len(),
                job_list(&self.live)
            )
        };
        format!("{live}, {} ended job(s) kept", self.ended)
    }
}

fn job_list(jobs: &[JobId]) -> String {
    jobs.iter()
        .map(|j| j.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The jobs of the journal at `path` that had not ended (what `--resume` would bring back);
/// `None` if it cannot be read or is no journal of this version.
pub fn unfinished_jobs(path: &Path) -> Option<Vec<JobId>> {
    let bytes = std::fs::read(path).ok()?;
    let contents = parse(&bytes).ok()?;
    Some(
        by_job(contents.records)
            .into_iter()
            .filter(|(_, e)| e.submit.is_some() && e.end.is_none())
            .map(|(j, _)| j)
            .collect(),
    )
}

/// What `gspc boot` without `--resume` says when it moves the journal at `path` aside to
/// `old`: that it was kept, and the jobs it had not ended.
pub fn kept_note(path: &Path, old: &Path) -> String {
    let kept = format!(
        "the journal of the runtime before is kept as {} (a boot without --resume starts a \
         new one)",
        old.display()
    );
    match unfinished_jobs(path) {
        Some(jobs) if !jobs.is_empty() => format!(
            "{kept}; its {} unfinished job(s) ({}) are not brought back: to resume them, stop \
             this runtime, move {} back to {} and boot with --resume",
            jobs.len(),
            job_list(&jobs),
            old.display(),
            path.display()
        ),
        _ => kept,
    }
}

/// Whether a persistent runtime keeps a journal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Journaling {
    Off,
    /// A new journal (an old one in the state directory is replaced).
    New,
    /// Bring back the jobs of the journal in the state directory, and journal on.
    Resume,
}

/// Sets up the journal of a runtime in `dir` (see [`Journaling`]); a resume says on standard
/// error (the runtime's log) what it brought back.
pub fn open(hub: &mut Hub, dir: &Path, how: Journaling) -> Result<(), String> {
    match how {
        Journaling::Off => Ok(()),
        Journaling::New => start(hub, dir),
        Journaling::Resume => {
            let r = resume(hub, dir)?;
            if let Some((why, bytes)) = &r.torn {
                eprintln!("journal: its last {bytes} bytes were cut off: {why}");
            }
            eprintln!("journal: {}", r.summary());
            for (job, why) in &r.failed {
                eprintln!("journal: job {job}: {why}");
            }
            Ok(())
        }
    }
}

/// Starts a new, empty journal in `dir` for `hub` (a fresh runtime).
pub fn start(hub: &mut Hub, dir: &Path) -> Result<(), String> {
    let path = dir.join(JOURNAL_FILE);
    let j = Journal::create(&path, &[])
        .map_err(|e| format!("cannot write the journal {}: {e}", path.display()))?;
    hub.set_journal(j);
    Ok(())
}

/// Brings back the jobs of the journal in `dir` into `hub` (which has none yet), rewrites
/// the journal (ended jobs as [`Record::Ended`], live ones as their submission and
/// operations) and journals on.
pub fn resume(hub: &mut Hub, dir: &Path) -> Result<Resumed, String> {
    let path = dir.join(JOURNAL_FILE);
    let mut bytes = Vec::new();
    match File::open(&path) {
        Ok(mut f) => f
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read the journal {}: {e}", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "there is no journal in {} (nothing to resume: boot without --resume)",
                dir.display()
            ));
        }
        Err(e) => return Err(format!("cannot read the journal {}: {e}", path.display())),
    };
    let contents =
        parse(&bytes).map_err(|e| format!("cannot resume from {}: {e}", path.display()))?;
    drop(bytes);
    let jobs = by_job(contents.records);
    let next = jobs.keys().next_back().map_or(1, |j| j + 1);
    let mut ended = Vec::new();
    let mut live = BTreeMap::new();
    for (job, e) in jobs {
        let Some(Record::Submit {
            net,
            submitted_unix,
            ..
        }) = &e.submit
        else {
            if let Some(r @ Record::Ended { .. }) = e.end {
                ended.push(r);
            }
            continue;
        };
        match e.end {
            Some(Record::End {
                outcome,
                tasks_done,
                elapsed_ms,
                ..
            }) => ended.push(Record::Ended {
                job,
                net: net.clone(),
                name: e.name.clone(),
                submitted_unix: *submitted_unix,
                outcome,
                tasks_done,
                elapsed_ms,
            }),
            Some(r) => ended.push(r),
            None => {
                live.insert(job, e);
            }
        }
    }
    let keep_ended = hub.keep_ended();
    if ended.len() > keep_ended {
        ended.drain(..ended.len() - keep_ended);
    }
    // The rewritten journal: the records are moved in and taken back after (a submission
    // holds its whole bundle, an operation its values: none is copied).
    let mut kept = ended;
    for (&job, e) in live.iter_mut() {
        kept.extend(e.submit.take());
        if let Some(name) = &e.name {
            kept.push(Record::Name {
                job,
                name: name.clone(),
            });
        }
        kept.extend(
            std::mem::take(&mut e.ops)
                .into_iter()
                .map(|(firings, op)| Record::Op { job, firings, op }),
        );
    }
    let j = Journal::create(&path, &kept)
        .map_err(|e| format!("cannot rewrite the journal {}: {e}", path.display()))?;
    let mut ended = Vec::new();
    for r in kept {
        match r {
            Record::Op { job, firings, op } => {
                if let Some(e) = live.get_mut(&job) {
                    e.ops.push((firings, op));
                }
            }
            Record::Submit { job, .. } => {
                if let Some(e) = live.get_mut(&job) {
                    e.submit = Some(r);
                }
            }
            Record::Name { .. } => {}
            Record::End { .. } | Record::Ended { .. } => ended.push(r),
        }
    }
    hub.set_journal(j);
    hub.set_next_job(next);
    let mut report = Resumed {
        torn: contents.torn,
        ended: ended.len(),
        ..Resumed::default()
    };
    for r in ended {
        if let Record::Ended {
            job,
            net,
            name,
            submitted_unix,
            outcome,
            tasks_done,
            elapsed_ms,
        } = r
        {
            hub.restore_ended(
                job,
                net,
                name,
                submitted_unix,
                outcome,
                tasks_done,
                elapsed_ms,
            );
        }
    }
    for (job, e) in live {
        let Some(Record::Submit {
            net,
            bundle,
            inputs,
            module_path,
            submitted_unix,
            seed,
            ..
        }) = e.submit
        else {
            continue;
        };
        let restored = held_allocations(&inputs, &e.ops)
            .and_then(|()| {
                pnet_bundle::format::decode(&bundle)
                    .map_err(|e| format!("its bundle does not decode: {e}"))
            })
            .and_then(|b| {
                hub.restore_live(
                    job,
                    &net,
                    b,
                    &inputs,
                    module_path,
                    seed,
                    submitted_unix,
                    e.name.clone(),
                    e.ops,
                )
            });
        match restored {
            Ok(()) => report.live.push(job),
            Err(why) => {
                let message = format!("the job could not be resumed: {why}");
                hub.journal_append(Record::End {
                    job,
                    outcome: JobOutcome::Failed {
                        code: "gspc-resume".into(),
                        message: message.clone(),
                    },
                    tasks_done: 0,
                    elapsed_ms: 0,
                });
                hub.restore_ended(
                    job,
                    net,
                    e.name,
                    submitted_unix,
                    JobOutcome::Failed {
                        code: "gspc-resume".into(),
                        message: message.clone(),
                    },
                    0,
                    0,
                );
                report.failed.push((job, message));
            }
        }
    }
    Ok(report)
}

/// A job that holds global memory allocations (ranges in its inputs, in the tokens put, or
/// in its tasks' results) cannot be resumed: their bytes lived in the working memory of the
/// workers, which ended with the runtime, and a new runtime numbers its allocations from
/// the start again, so the handle of a new allocation could be an old one: the job would
/// compute on other bytes. It fails instead, naming them.
fn held_allocations(inputs: &[(String, Vec<Value>)], ops: &[(u64, Op)]) -> Result<(), String> {
    let mut handles = std::collections::BTreeSet::new();
    for v in inputs.iter().flat_map(|(_, vs)| vs) {
        crate::memory::allocation_handles(v, &mut handles);
    }
    for (_, op) in ops {
        match op {
            Op::Done { outputs, .. } => {
                for v in outputs {
                    crate::memory::allocation_handles(v, &mut handles);
                }
            }
            Op::Put { value, .. } | Op::Response { value, .. } => {
                crate::memory::allocation_handles(value, &mut handles)
            }
            Op::Discard { .. } | Op::Close => {}
        }
    }
    if handles.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = handles.iter().map(|h| format!("`{h}`")).collect();
    Err(format!(
        "it holds the global memory allocation{} {} (gspc alloc), whose bytes lived in the \
         working memory of the workers that ended with the crashed runtime; a resume does not \
         bring allocations back (and a new allocation may get an old handle). Allocate and \
         fill the memory again and submit the job again",
        if handles.len() == 1 { "" } else { "s" },
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests;
