//! Several threads exploring one slice of a BFS level at a time, with the ids, counts and
//! verdicts of a one-thread exploration (`--threads N`, inline index only). Every step of a
//! slice is done by all the threads, which meet at a barrier between the steps:
//!
//! 1. The threads take the slice's batches of [`BATCH_STATES`] states in turn from a shared
//!    counter (a thread slowed down by another job on its core just takes fewer), expand
//!    them and look every successor up in the one shared index as they go
//!    ([`SharedIndex::find_or_claim`]): one lookup per edge, as one thread makes, by the
//!    thread that computed the successor. A marking the index does not hold gets a slot,
//!    claimed with its edge's position in the one-thread order (batch, then successor in
//!    the batch); a thread meeting it again at an earlier position lowers that value. After
//!    this step, each claimed slot holds the first position its marking was reached at.
//! 2. Each thread writes the slots it claimed into a table by those first positions
//!    (`firsts`: one entry per edge of the slice, in the one-thread order).
//! 3. The table is cut into parts; the threads count the slots in each part.
//! 4. The threads number the slots of each part in order (the first id of a part follows
//!    from the counts before it): the order in which one thread would have found the new
//!    markings. Each writes the markings of its parts to their arena entries (reserved
//!    before the slice) and their ids into their slots.
//!
//! The calling thread then grows the index if one thread would have (with every thread).
//!
//! When the other threads take few of a slice's batches, or the calling thread waits for
//! them for more than a quarter of step 1 (their cores are busy with other jobs: waiting
//! for them costs more than they bring), the next slices go to the one-thread code, 4 of
//! them, then twice as many each time it happens again (at most 256).
//!
//! Ids, and so traces, deadlock lists and the SCC pass, are those of one thread. A slice in
//! which a limit would be reached (states, memory, capacity), a second token would land on
//! a place, or the index would pass 7/8 full is given back after step 1: its claimed slots
//! are freed (which restores the index as it was) and the one-thread code explores it.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::{BATCH_STATES, BitBatch, BitNet, Limits, PtExploration, Seen, expand_any};
use crate::store::{Appender, Arena, SharedIndex};

/// Stack of each thread spawned (bytes).
const STACK: usize = 256 << 10;
/// How far ahead the lookups prefetch index buckets.
const AHEAD: usize = 32;
/// Parts of the `firsts` table per thread in steps 3 and 4.
const PARTS_PER_THREAD: usize = 8;
/// Entries of `firsts` per state of a slice to start with (grown when a slice needs more).
const FIRSTS_PER_STATE: usize = 16;
/// An entry of `firsts` without a slot.
const NONE: u64 = u64::MAX;

pub(super) struct Par {
    workers: Vec<Worker>,
    /// Per batch of the slice: its number of successors.
    counts: Vec<AtomicU32>,
    /// Per edge of the slice in the one-thread order: the slot of the marking first reached
    /// by this edge, or [`NONE`]. Every entry is [`NONE`] between slices.
    firsts: Vec<AtomicU64>,
    /// Per part of `firsts`: its number of slots.
    parts: Vec<AtomicUsize>,
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
    /// Per batch: the index in `firsts` of its first edge.
    offsets: Vec<usize>,
    /// The places marked in the new states this thread numbered, and their most tokens.
    places: [u64; 2],
    ones: u64,
    /// The calling thread: how long it waited for the others after step 1, and how long the
    /// slice took up to then.
    waited: Duration,
    took: Duration,
}

/// What the threads share while they explore a slice.
struct Shared<'a> {
    net: &'a BitNet,
    arena: Arena<'a>,
    index: SharedIndex<'a>,
    appender: Appender,
    /// First state of the slice and its end.
    start: usize,
    end: usize,
    /// The next batch to take.
    next: AtomicUsize,
    /// Set by a thread that bails: the others stop too.
    stop: AtomicBool,
    counts: &'a [AtomicU32],
    firsts: &'a [AtomicU64],
    parts: &'a [AtomicUsize],
    /// Slots claimed by all threads.
    claims: AtomicUsize,
    /// The next part to count (step 3) and to number (step 4).
    next_count: AtomicUsize,
    next_number: AtomicUsize,
    /// States before the slice; the slice is given back unless the number after it is
    /// below `too_many`.
    old_len: usize,
    too_many: usize,
    /// The value claimed with position 0 (the number of states before the slice, + 1: above
    /// every id + 1 held in the index).
    base: u32,
    per_batch: usize,
    /// Batches taken at a time.
    chunk: usize,
    /// Slots one thread may claim.
    room: usize,
    gate: Gate,
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
                    offsets: Vec::new(),
                    places: [0; 2],
                    ones: 0,
                    waited: Duration::ZERO,
                    took: Duration::ZERO,
                })
                .collect(),
            counts: Vec::new(),
            firsts: Vec::new(),
            parts: (0..threads * PARTS_PER_THREAD)
                .map(|_| AtomicUsize::new(0))
                .collect(),
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
        self.try_slice(net, e, states, lim, seen)
    }

    fn try_slice(
        &mut self,
        net: &BitNet,
        e: &mut PtExploration,
        states: std::ops::Range<usize>,
        lim: &Limits,
        seen: &mut Seen,
    ) -> bool {
        let batches = states.len().div_ceil(BATCH_STATES);
        let old_len = e.store.len();
        // Every position's value must fit below `u32::MAX` (the busy mark).
        let top = (old_len as u64 + 1) + (batches * self.per_batch) as u64;
        if top >= u64::from(u32::MAX) - 1 {
            return false;
        }
        let threads = self.workers.len();
        let room = e.store.claim_room() / threads;
        // The first number of states after the slice past a limit (states, capacity,
        // memory), found by bisection (the memory grows with the states).
        let over = |len: usize| {
            len >= lim.stop_len
                || len >= u32::MAX as usize - 1
                || lim
                    .max_memory
                    .is_some_and(|l| e.store.memory_bytes_at(len) as u64 > l)
        };
        let (mut lo, mut hi) = (old_len, old_len + room * threads + 1);
        if !over(hi) {
            lo = hi;
        }
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if over(mid) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let too_many = lo;
        // Arena entries for every state the threads may add.
        e.store
            .reserve_arena((old_len + room * threads).min(too_many));
        let too_many = too_many.min(e.store.arena_room() + 1);
        let want = states.len() * FIRSTS_PER_STATE;
        if self.firsts.len() < want {
            self.firsts.resize_with(want, || AtomicU64::new(NONE));
        }
        let Some((arena, index, appender)) = e.store.split_index() else {
            return false;
        };
        self.counts.clear();
        self.counts.resize_with(batches, || AtomicU32::new(0));
        let base = old_len as u32 + 1;
        let sh = Shared {
            net,
            arena,
            index,
            appender,
            start: states.start,
            end: states.end,
            next: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
            counts: &self.counts,
            firsts: &self.firsts,
            parts: &self.parts,
            claims: AtomicUsize::new(0),
            next_count: AtomicUsize::new(0),
            next_number: AtomicUsize::new(0),
            old_len,
            too_many,
            base,
            per_batch: self.per_batch,
            chunk: self.chunk,
            room,
            gate: Gate::new(threads),
        };
        let sh = &sh;
        let started = Instant::now();
        let mut numbered = false;
        std::thread::scope(|sc| {
            let mut workers = self.workers.iter_mut();
            let first = workers.next();
            for w in workers {
                // A small stack: a default one (2 MiB) may get a huge page, zeroed at
                // every slice.
                let spawned = std::thread::Builder::new()
                    .stack_size(STACK)
                    .spawn_scoped(sc, move || w.run(sh, None));
                if spawned.is_err() {
                    sh.stop.store(true, Ordering::Relaxed);
                    sh.gate.leave();
                }
            }
            if let Some(w) = first {
                numbered = w.run(sh, Some(started));
            }
        });
        let (waited, took) = (self.workers[0].waited, self.workers[0].took);
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
        let fresh = sh.claims.load(Ordering::Relaxed);
        if !numbered {
            for w in &self.workers {
                for &slot in &w.claimed {
                    e.store.unclaim(slot);
                }
            }
            #[cfg(test)]
            super::tests::PAR_SLICES[1].fetch_add(1, Ordering::Relaxed);
            // Room in `firsts` for the next try of a slice like this one.
            let edges: usize = self
                .counts
                .iter()
                .map(|c| c.load(Ordering::Relaxed) as usize)
                .sum();
            if edges > self.firsts.len() {
                self.firsts.resize_with(edges, || AtomicU64::new(NONE));
            }
            return false;
        }
        let new_len = old_len + fresh;
        e.store.appended(new_len);
        e.store.reserve_with(new_len, threads);
        // Counts, in the order of a one-thread exploration.
        e.edges += self
            .counts
            .iter()
            .map(|c| u64::from(c.load(Ordering::Relaxed)))
            .sum::<u64>();
        let mut dead: Vec<u32> = Vec::new();
        for w in &self.workers {
            dead.extend_from_slice(&w.dead);
            for (x, &y) in e.fired.iter_mut().zip(&w.fired) {
                *x |= y;
            }
            for (s, &x) in seen.places.iter_mut().zip(&w.places) {
                *s |= x;
            }
            e.marking_max = e.marking_max.max(w.ones);
        }
        dead.sort_unstable();
        e.dead_count += dead.len() as u64;
        let room = lim.traces.saturating_sub(e.dead.len());
        e.dead.extend(dead.iter().take(room));
        #[cfg(test)]
        super::tests::PAR_SLICES[0].fetch_add(1, Ordering::Relaxed);
        true
    }
}

impl Worker {
    /// This thread's part of every step of a slice (see the module); `started` is given to
    /// the calling thread (the time the slice started). True when the new states were
    /// numbered (false: the slice is given back).
    fn run(&mut self, sh: &Shared<'_>, started: Option<Instant>) -> bool {
        let broken = Broken(&sh.gate);
        (self.places, self.ones) = ([0; 2], 0);
        self.expand(sh);
        sh.claims.fetch_add(self.claimed.len(), Ordering::Relaxed);
        let arrived = Instant::now();
        sh.gate.wait();
        if let Some(started) = started {
            self.waited = arrived.elapsed();
            self.took = started.elapsed();
        }
        // Every thread decides the same from what the others published before the barrier.
        self.offsets.clear();
        let mut edges = 0usize;
        for c in sh.counts {
            self.offsets.push(edges);
            edges += c.load(Ordering::Relaxed) as usize;
        }
        let new_len = sh.old_len + sh.claims.load(Ordering::Relaxed);
        if sh.stop.load(Ordering::Relaxed) || new_len >= sh.too_many || edges > sh.firsts.len() {
            std::mem::forget(broken);
            return false;
        }
        // Step 2: the claimed slots by first position.
        for (i, &slot) in self.claimed.iter().enumerate() {
            if let Some(&ahead) = self.claimed.get(i + AHEAD) {
                sh.index.prefetch_slot(ahead);
            }
            let pos = (sh.index.claimed(slot).1 - sh.base) as usize;
            let (b, k) = (pos / sh.per_batch, pos % sh.per_batch);
            sh.firsts[self.offsets[b] + k].store(slot as u64, Ordering::Relaxed);
        }
        sh.gate.wait();
        // Step 3: slots per part.
        let parts = sh.parts.len();
        let per_part = edges.div_ceil(parts).max(1);
        loop {
            let p = sh.next_count.fetch_add(1, Ordering::Relaxed);
            if p >= parts {
                break;
            }
            let range = (p * per_part).min(edges)..((p + 1) * per_part).min(edges);
            let n = sh.firsts[range]
                .iter()
                .filter(|x| x.load(Ordering::Relaxed) != NONE)
                .count();
            sh.parts[p].store(n, Ordering::Relaxed);
        }
        sh.gate.wait();
        // Step 4: ids in the one-thread order, markings to the arena.
        let (mut places, mut ones) = ([0u64; 2], 0u64);
        loop {
            let p = sh.next_number.fetch_add(1, Ordering::Relaxed);
            if p >= parts {
                break;
            }
            let mut id = sh.old_len
                + sh.parts[..p]
                    .iter()
                    .map(|n| n.load(Ordering::Relaxed))
                    .sum::<usize>();
            let range = (p * per_part).min(edges)..((p + 1) * per_part).min(edges);
            let firsts = &sh.firsts[range];
            for (i, entry) in firsts.iter().enumerate() {
                if let Some(ahead) = firsts.get(i + AHEAD) {
                    let ahead = ahead.load(Ordering::Relaxed);
                    if ahead != NONE {
                        sh.index.prefetch_slot(ahead as usize);
                    }
                }
                let slot = entry.load(Ordering::Relaxed);
                if slot == NONE {
                    continue;
                }
                entry.store(NONE, Ordering::Relaxed);
                let slot = slot as usize;
                let (key, _) = sh.index.claimed(slot);
                // SAFETY: `id` is below `too_many`, within the reserved arena; each id is
                // written once, by the thread numbering its part, and the arena is no
                // longer read during this step.
                unsafe { sh.appender.write(id, key) };
                sh.index.publish(slot, key[1], id as u32);
                places[0] |= key[0];
                places[1] |= key[1];
                ones = ones.max(u64::from(key[0].count_ones() + key[1].count_ones()));
                id += 1;
            }
        }
        self.places = places;
        self.ones = ones;
        std::mem::forget(broken);
        true
    }

    /// Takes batches of the slice until none is left (step 1 of the module).
    fn expand(&mut self, sh: &Shared<'_>) {
        // Small buffers allocated here, by the thread writing them.
        let w = sh.net.w;
        let b = &mut self.batch;
        b.sw = vec![0; w];
        b.next = vec![0; w];
        b.en = vec![0; sh.net.tw];
        self.dead.clear();
        self.fired.fill(false);
        self.claimed.clear();
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

/// Breaks the gate if its thread unwinds before it is forgotten: the other threads then
/// pass every barrier instead of waiting for it forever (the panic reaches the caller when
/// the threads are joined).
struct Broken<'a>(&'a Gate);

impl Drop for Broken<'_> {
    fn drop(&mut self) {
        self.0.break_all();
    }
}

/// A barrier for the threads of a slice: a thread arriving spins for a while (the others
/// are usually close behind), then sleeps.
struct Gate {
    /// Threads arrived at the current barrier, threads taking part, and whether it is
    /// broken.
    state: Mutex<(usize, usize, bool)>,
    /// Barriers passed.
    passed: AtomicUsize,
    cv: Condvar,
}

/// Spins before a thread sleeps at a barrier.
const SPINS: usize = 1 << 14;

impl Gate {
    fn new(threads: usize) -> Gate {
        Gate {
            state: Mutex::new((0, threads, false)),
            passed: AtomicUsize::new(0),
            cv: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (usize, usize, bool)> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Opens the current barrier (the lock held).
    fn open(&self, st: &mut (usize, usize, bool)) {
        st.0 = 0;
        self.passed.fetch_add(1, Ordering::Release);
        self.cv.notify_all();
    }

    /// Waits until every thread taking part has arrived.
    fn wait(&self) {
        let mut st = self.lock();
        if st.2 {
            return;
        }
        let passed = self.passed.load(Ordering::Relaxed);
        st.0 += 1;
        if st.0 >= st.1 {
            self.open(&mut st);
            return;
        }
        drop(st);
        for _ in 0..SPINS {
            if self.passed.load(Ordering::Acquire) != passed {
                return;
            }
            std::hint::spin_loop();
        }
        let mut st = self.lock();
        while self.passed.load(Ordering::Acquire) == passed && !st.2 {
            st = self.cv.wait(st).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// A thread that will not take part (it could not be started).
    fn leave(&self) {
        let mut st = self.lock();
        st.1 -= 1;
        if st.0 > 0 && st.0 >= st.1 {
            self.open(&mut st);
        }
    }

    /// Lets every thread through every barrier from now on.
    fn break_all(&self) {
        let mut st = self.lock();
        st.2 = true;
        self.open(&mut st);
    }
}
