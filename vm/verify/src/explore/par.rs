//! Several threads exploring one slice of a BFS level at a time, with the ids, counts and
//! verdicts of a one-thread exploration (`--threads N`, inline index only).
//!
//! 1. The threads take the slice's batches of [`BATCH_STATES`] states in turn from a shared
//!    counter (a thread slowed down by another job on its core just takes fewer), expand
//!    them and look every successor up in the one shared index as they go
//!    ([`SharedIndex::find_or_claim`]): one lookup per edge, as one thread makes, by the
//!    thread that computed the successor. A marking the index does not hold gets a slot,
//!    claimed with its edge's position in the one-thread order (batch, then successor in
//!    the batch); a thread meeting it again at an earlier position lowers that value. After
//!    the slice, each claimed slot holds the first position its marking was reached at.
//! 2. One thread numbers the new markings in the order of those first positions (the order
//!    in which one thread would have found them), appends them to the arena and writes the
//!    final ids into their slots, then grows the index if one thread would have.
//!
//! When the other threads take few of a slice's batches, or the calling thread waits for
//! them for more than a quarter of the slice's time (their cores are busy with other jobs:
//! waiting for them costs more than they bring), the next slices go to the one-thread code,
//! 4 of them, then twice as many each time it happens again (at most 256).
//!
//! Ids, and so traces, deadlock lists and the SCC pass, are those of one thread. A slice in
//! which a limit would be reached (states, memory, capacity), a second token would land on
//! a place, or the index would pass 7/8 full is given back: its claimed slots are freed
//! (which restores the index as it was) and the one-thread code explores it.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::time::Instant;

use super::{BATCH_STATES, BitBatch, BitNet, Limits, PtExploration, Seen, expand_any};
use crate::store::{Arena, SharedIndex};

/// Stack of each thread spawned (bytes).
const STACK: usize = 256 << 10;
/// How far ahead the lookups prefetch index buckets.
const AHEAD: usize = 32;

pub(super) struct Par {
    workers: Vec<Worker>,
    /// Per batch of the slice: its number of successors.
    counts: Vec<AtomicU32>,
    /// The slots claimed in a slice and their markings.
    fresh: Vec<(usize, [u64; 2])>,
    /// Per edge of the slice in the one-thread order: the marking first reached by this
    /// edge (in `fresh`), or `u32::MAX`.
    firsts: Vec<u32>,
    /// The indices in `fresh` in the order of `firsts`.
    order: Vec<u32>,
    /// Successors per batch at most (`BATCH_STATES` times the firable transitions): the
    /// position of successor `k` of batch `b` is `b * per_batch + k`.
    per_batch: usize,
    /// Batches a thread takes at a time.
    chunk: usize,
    /// Slices left to one thread before the threads try again, and the number of them
    /// after the last try (doubling while the other threads get little done).
    skip: usize,
    backoff: usize,
}

/// One thread's part of a slice. Aligned so that no cache line is written by two threads.
#[repr(align(128))]
struct Worker {
    batch: BitBatch,
    /// Slots claimed.
    claimed: Vec<usize>,
    /// Batches expanded.
    batches: usize,
    dead: Vec<u32>,
    fired: Vec<bool>,
}

/// What the threads share while they explore a slice.
struct Shared<'a> {
    net: &'a BitNet,
    arena: Arena<'a>,
    index: SharedIndex<'a>,
    /// First state of the slice and its end.
    start: usize,
    end: usize,
    /// The next batch to take.
    next: AtomicUsize,
    /// Set by a thread that bails: the others stop too.
    stop: AtomicBool,
    counts: &'a [AtomicU32],
    /// The value claimed with position 0 (the number of states before the slice, + 1: above
    /// every id + 1 held in the index).
    base: u32,
    per_batch: usize,
    /// Batches taken at a time.
    chunk: usize,
    /// Slots one thread may claim.
    room: usize,
}

impl Par {
    /// `threads` threads taking `chunk` batches at a time.
    pub(super) fn new(threads: usize, chunk: usize, net: &BitNet, transitions: usize) -> Par {
        Par {
            workers: (0..threads)
                .map(|_| Worker {
                    batch: BitBatch::new(net.w, net.tw),
                    claimed: Vec::new(),
                    batches: 0,
                    dead: Vec::new(),
                    fired: vec![false; transitions],
                })
                .collect(),
            counts: Vec::new(),
            fresh: Vec::new(),
            firsts: Vec::new(),
            order: Vec::new(),
            per_batch: (BATCH_STATES * net.firable.len()).max(1),
            chunk: chunk.max(1),
            skip: 0,
            backoff: 0,
        }
    }

    /// Explores the states `states` of a level (see the module); false when the slice is
    /// left to the one-thread code, with nothing changed.
    pub(super) fn slice(
        &mut self,
        net: &BitNet,
        e: &mut PtExploration,
        states: std::ops::Range<usize>,
        lim: &Limits,
        seen: &mut Seen,
    ) -> bool {
        if self.skip > 0 {
            self.skip -= 1;
            return false;
        }
        let batches = states.len().div_ceil(BATCH_STATES);
        let old_len = e.store.len();
        // Every position's value must fit below `u32::MAX` (the busy mark).
        let top = (old_len as u64 + 1) + (batches * self.per_batch) as u64;
        if top >= u64::from(u32::MAX) - 1 {
            return false;
        }
        let threads = self.workers.len();
        let room = e.store.claim_room() / threads;
        let Some((arena, index)) = e.store.split_index() else {
            return false;
        };
        self.counts.clear();
        self.counts.resize_with(batches, || AtomicU32::new(0));
        let base = old_len as u32 + 1;
        let sh = Shared {
            net,
            arena,
            index,
            start: states.start,
            end: states.end,
            next: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            counts: &self.counts,
            base,
            per_batch: self.per_batch,
            chunk: self.chunk,
            room,
        };
        let sh = &sh;
        for w in &mut self.workers {
            w.claimed.clear();
            w.batches = 0;
        }
        let started = Instant::now();
        let mut own_done = started;
        std::thread::scope(|sc| {
            let mut workers = self.workers.iter_mut();
            let first = workers.next();
            for w in workers {
                // A small stack: a default one (2 MiB) may get a huge page, zeroed at
                // every slice.
                let spawned = std::thread::Builder::new()
                    .stack_size(STACK)
                    .spawn_scoped(sc, move || w.run(sh));
                if spawned.is_err() {
                    sh.stop.store(true, Ordering::Relaxed);
                }
            }
            if let Some(w) = first {
                w.run(sh);
            }
            own_done = Instant::now();
        });
        let (waited, took) = (own_done.elapsed(), started.elapsed());
        // Set by a thread that bailed, or when a thread could not be started.
        let stopped = sh.stop.load(Ordering::Relaxed);
        // The other threads took few batches, or this one waited long for them (their cores
        // busy with other jobs): the next slices go to one thread, more of them each time
        // this happens again.
        let total: usize = self.workers.iter().map(|w| w.batches).sum();
        let others = total - self.workers[0].batches;
        if others * 2 * threads < total * (threads - 1) || waited * 4 > took {
            self.backoff = (self.backoff * 2).clamp(4, 256);
            self.skip = self.backoff;
        } else {
            self.backoff = 0;
        }
        let fresh: usize = self.workers.iter().map(|w| w.claimed.len()).sum();
        let new_len = old_len + fresh;
        if stopped
            || new_len >= lim.stop_len
            || new_len >= u32::MAX as usize - 1
            || lim
                .max_memory
                .is_some_and(|l| e.store.memory_bytes_at(new_len) as u64 > l)
        {
            for w in &self.workers {
                for &slot in &w.claimed {
                    e.store.unclaim(slot);
                }
            }
            #[cfg(test)]
            super::tests::PAR_SLICES[1].fetch_add(1, Ordering::Relaxed);
            return false;
        }
        // Edge positions to indices in the one-thread order of the slice's edges.
        let mut offsets = Vec::with_capacity(batches);
        let mut edges = 0usize;
        for c in &self.counts {
            offsets.push(edges);
            edges += c.load(Ordering::Relaxed) as usize;
        }
        // The claimed slots (their final values and markings, read with prefetching: they
        // are likely out of the cache by now) by first position.
        self.fresh.clear();
        self.firsts.clear();
        self.firsts.resize(edges, u32::MAX);
        for w in &self.workers {
            for (i, &slot) in w.claimed.iter().enumerate() {
                if let Some(&ahead) = w.claimed.get(i + AHEAD) {
                    e.store.prefetch_slot(ahead);
                }
                let (key, value) = e.store.claimed(slot);
                let pos = (value - base) as usize;
                let (b, k) = (pos / self.per_batch, pos % self.per_batch);
                self.firsts[offsets[b] + k] = self.fresh.len() as u32;
                self.fresh.push((slot, key));
            }
        }
        // Ids in that order.
        let words = e.store.words();
        self.order.clear();
        self.order
            .extend(self.firsts.iter().copied().filter(|&j| j != u32::MAX));
        for (i, &j) in self.order.iter().enumerate() {
            if let Some(&ahead) = self.order.get(i + AHEAD) {
                e.store.prefetch_slot(self.fresh[ahead as usize].0);
            }
            let (slot, key) = self.fresh[j as usize];
            // Room checked above.
            let id = e.store.append_unindexed(&key[..words]).unwrap_or(u32::MAX);
            e.store.set_claimed_id(slot, id);
        }
        e.store.reserve_with(new_len, threads);
        // Counts, in the order of a one-thread exploration.
        e.edges += edges as u64;
        let mut dead: Vec<u32> = Vec::new();
        for w in &self.workers {
            dead.extend_from_slice(&w.dead);
            for (x, &y) in e.fired.iter_mut().zip(&w.fired) {
                *x |= y;
            }
        }
        dead.sort_unstable();
        e.dead_count += dead.len() as u64;
        let room = lim.traces.saturating_sub(e.dead.len());
        e.dead.extend(dead.iter().take(room));
        seen.add(e, old_len);
        #[cfg(test)]
        super::tests::PAR_SLICES[0].fetch_add(1, Ordering::Relaxed);
        true
    }
}

impl Worker {
    /// Takes batches of the slice until none is left (step 1 of the module).
    fn run(&mut self, sh: &Shared<'_>) {
        // Small buffers allocated here, by the thread writing them.
        let w = sh.net.w;
        let b = &mut self.batch;
        b.sw = vec![0; w];
        b.next = vec![0; w];
        b.en = vec![0; sh.net.tw];
        self.dead.clear();
        self.fired.fill(false);
        self.batches = 0;
        let chunk = sh.chunk;
        let (mut x, mut chunk_end) = (0, 0);
        loop {
            if sh.stop.load(Ordering::Relaxed) {
                break;
            }
            if x == chunk_end {
                x = sh.next.fetch_add(chunk, Ordering::Relaxed);
                chunk_end = x + chunk;
            }
            let first = sh.start + x * BATCH_STATES;
            if first >= sh.end {
                break;
            }
            let states = first..(first + BATCH_STATES).min(sh.end);
            let b = &mut self.batch;
            b.n = 0;
            b.ends.clear();
            if expand_any(sh.net, &sh.arena, states, b).is_err() {
                sh.stop.store(true, Ordering::Relaxed);
                break;
            }
            let n = b.n;
            sh.counts[x].store(n as u32, Ordering::Relaxed);
            let mut from = 0;
            for (j, &to) in b.ends.iter().enumerate() {
                if to == from {
                    self.dead.push((first + j) as u32);
                }
                from = to;
            }
            for &t in &b.ts[..n] {
                self.fired[t as usize] = true;
            }
            let value = sh.base + (x * sh.per_batch) as u32;
            let hashes = &b.hashes[..n];
            for &h in &hashes[..n.min(AHEAD)] {
                sh.index.prefetch(h);
            }
            for (k, &h) in hashes.iter().enumerate() {
                if let Some(&ahead) = hashes.get(k + AHEAD) {
                    sh.index.prefetch(ahead);
                }
                let key = [b.keys[k * w], if w == 2 { b.keys[k * w + 1] } else { 0 }];
                if let Some(slot) = sh.index.find_or_claim(key, h, value + k as u32) {
                    self.claimed.push(slot);
                }
            }
            x += 1;
            self.batches += 1;
            if self.claimed.len() > sh.room {
                sh.stop.store(true, Ordering::Relaxed);
                break;
            }
        }
    }
}
