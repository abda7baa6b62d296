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
//! 2. Each thread sorts the slots it claimed by those first positions (its list is nearly
//!    sorted already: it took its batches in order).
//! 3. Each thread numbers its slots in the order of the first positions of all the threads'
//!    slots (the order in which one thread would have found the new markings: the id of a
//!    slot is the number of slots of every list with a smaller position, found by walking
//!    the other sorted lists along its own), writes their markings to their arena entries
//!    (reserved before the slice) and their ids into them.
//!
//! The calling thread then grows the index if one thread would have (with every thread).
//!
//! The threads are started once for the whole exploration ([`Pool`], [`Par::new`]) and
//! wait for the next slice between slices (spinning for a while, then asleep).
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
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError, RwLock};
use std::thread::Scope;
use std::time::{Duration, Instant};

use super::{BATCH_STATES, BitBatch, BitNet, Limits, PtExploration, Seen, expand_any};
use crate::store::{Appender, Arena, SharedIndex};

/// Stack of each thread spawned (bytes).
const STACK: usize = 256 << 10;
/// How far ahead the lookups prefetch index buckets.
const AHEAD: usize = 32;

pub(super) struct Par<'p> {
    pool: &'p Pool,
    /// Per batch of the slice: its number of successors.
    counts: Vec<AtomicU32>,
    /// Per thread: its claimed slots as `first position << 32 | index in its claims`,
    /// sorted (step 2).
    lists: Vec<RwLock<Vec<u64>>>,
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

/// The threads of an exploration (see [`Par::new`]): each one's part of a slice, and the
/// slice they are asked to explore.
pub(super) struct Pool {
    /// Per thread (0: the calling one): its part of a slice.
    workers: Vec<Mutex<Worker>>,
    job: Mutex<Job>,
    /// Signalled when a slice is posted or the threads are to end.
    posted: Condvar,
    /// Signalled when a thread is done with a slice.
    finished: Condvar,
    /// The generation of the last slice posted (read while spinning).
    generation: AtomicU64,
}

/// The slice the threads are asked to explore.
struct Job {
    generation: u64,
    /// The slice's [`Shared`] (valid while `running > 0`).
    shared: usize,
    /// Threads still exploring it.
    running: usize,
    /// Threads started, and whether one of them panicked.
    threads: usize,
    panicked: bool,
    quit: bool,
}

impl Drop for Par<'_> {
    /// Ends the threads (the scope they run in then joins them).
    fn drop(&mut self) {
        self.pool.job().quit = true;
        self.pool.posted.notify_all();
    }
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
    /// The markings of the slots claimed (step 2).
    keys: Vec<[u64; 2]>,
    /// Per thread: how many slots of its list come before the current one (step 3).
    cursors: Vec<usize>,
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
    lists: &'a [RwLock<Vec<u64>>],
    /// Slots claimed by all threads.
    claims: AtomicUsize,
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

impl Pool {
    /// The parts of `threads` threads (the calling one included).
    pub(super) fn new(threads: usize, net: &BitNet, transitions: usize) -> Pool {
        Pool {
            workers: (0..threads)
                .map(|_| {
                    Mutex::new(Worker {
                        batch: BitBatch::new(net.w, net.tw),
                        claimed: Vec::new(),
                        batches: 0,
                        dead: Vec::new(),
                        fired: vec![false; transitions],
                        keys: Vec::new(),
                        cursors: vec![0; threads],
                        places: [0; 2],
                        ones: 0,
                        waited: Duration::ZERO,
                        took: Duration::ZERO,
                    })
                })
                .collect(),
            job: Mutex::new(Job {
                generation: 0,
                shared: 0,
                running: 0,
                threads: 0,
                panicked: false,
                quit: false,
            }),
            posted: Condvar::new(),
            finished: Condvar::new(),
            generation: AtomicU64::new(0),
        }
    }

    fn job(&self) -> MutexGuard<'_, Job> {
        self.job.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn worker(&self, me: usize) -> MutexGuard<'_, Worker> {
        self.workers[me]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Thread `me` (from 1): explores its part of every slice posted until told to end.
    fn serve(&self, me: usize) {
        let mut seen = 0;
        loop {
            // The next slice, spinning for a while (slices often follow each other closely).
            for _ in 0..SPINS {
                if self.generation.load(Ordering::Acquire) != seen {
                    break;
                }
                std::hint::spin_loop();
            }
            let mut job = self.job();
            while job.generation == seen && !job.quit {
                job = self
                    .posted
                    .wait(job)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            if job.quit {
                return;
            }
            seen = job.generation;
            let shared = job.shared;
            drop(job);
            let done = Done(self);
            // SAFETY: `shared` points to the slice's `Shared`, which the calling thread keeps
            // alive until every thread posted to is done with it (`Done`, also when
            // unwinding): see `Par::try_slice`.
            let sh = unsafe { &*(shared as *const Shared<'_>) };
            self.worker(me).run(sh, me, None);
            drop(done);
        }
    }
}

/// Tells the calling thread that this one is done with the slice, when dropped (also when
/// it unwinds: then the exploration panics too).
struct Done<'a>(&'a Pool);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        let mut job = self.0.job();
        job.running -= 1;
        job.panicked |= std::thread::panicking();
        self.0.finished.notify_all();
    }
}

impl<'p> Par<'p> {
    /// Starts the threads of `pool` but the calling one, in `scope`; they end when the
    /// `Par` is dropped. Each thread takes `chunk` batches at a time. `None` when no thread
    /// could be started.
    pub(super) fn new<'s>(
        scope: &'s Scope<'s, '_>,
        pool: &'p Pool,
        chunk: usize,
        net: &BitNet,
    ) -> Option<Par<'p>>
    where
        'p: 's,
    {
        let mut started = 0;
        for me in 1..pool.workers.len() {
            // A small stack: a default one (2 MiB) may get a huge page.
            let spawned = std::thread::Builder::new()
                .stack_size(STACK)
                .spawn_scoped(scope, move || pool.serve(me));
            if spawned.is_err() {
                break;
            }
            started += 1;
        }
        pool.job().threads = started;
        let par = Par {
            pool,
            counts: Vec::new(),
            lists: (0..=started).map(|_| RwLock::new(Vec::new())).collect(),
            per_batch: (BATCH_STATES * net.firable.len()).max(1),
            chunk: chunk.max(1),
            skip: 0,
            backoff: 0,
        };
        (started > 0).then_some(par)
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
        let threads = self.lists.len();
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
            lists: &self.lists,
            claims: AtomicUsize::new(0),
            old_len,
            too_many,
            base,
            per_batch: self.per_batch,
            chunk: self.chunk,
            room,
            gate: Gate::new(threads),
        };
        let sh = &sh;
        for me in 0..threads {
            let mut w = self.pool.worker(me);
            w.claimed.clear();
            w.batches = 0;
        }
        let started = Instant::now();
        {
            let mut job = self.pool.job();
            assert!(!job.panicked, "a thread exploring a slice panicked");
            job.generation += 1;
            job.shared = sh as *const Shared<'_> as usize;
            job.running = job.threads;
            self.pool
                .generation
                .store(job.generation, Ordering::Release);
            self.pool.posted.notify_all();
        }
        // Waits for every thread to be done with `sh` (also when this one unwinds).
        struct Wait<'a>(&'a Pool);
        impl Drop for Wait<'_> {
            fn drop(&mut self) {
                let mut job = self.0.job();
                while job.running > 0 {
                    job = self
                        .0
                        .finished
                        .wait(job)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            }
        }
        let wait = Wait(self.pool);
        let numbered = self.pool.worker(0).run(sh, 0, Some(started));
        drop(wait);
        assert!(
            !self.pool.job().panicked,
            "a thread exploring a slice panicked"
        );
        let workers: Vec<_> = (0..threads).map(|me| self.pool.worker(me)).collect();
        let (waited, took) = (workers[0].waited, workers[0].took);
        // The other threads took few batches, or this one waited long for them (their cores
        // busy with other jobs): the next slices go to one thread, more of them each time
        // this happens again.
        let total: usize = workers.iter().map(|w| w.batches).sum();
        let others = total - workers[0].batches;
        if others * 2 * threads < total * (threads - 1) || waited * 4 > took {
            self.backoff = (self.backoff * 2).clamp(4, 256);
            self.skip = self.backoff;
        } else {
            self.backoff = 0;
        }
        let fresh = sh.claims.load(Ordering::Relaxed);
        if !numbered {
            for w in &workers {
                for &slot in &w.claimed {
                    e.store.unclaim(slot);
                }
            }
            #[cfg(test)]
            super::tests::PAR_SLICES[1].fetch_add(1, Ordering::Relaxed);
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
        for w in &workers {
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
    fn run(&mut self, sh: &Shared<'_>, me: usize, started: Option<Instant>) -> bool {
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
        let new_len = sh.old_len + sh.claims.load(Ordering::Relaxed);
        if sh.stop.load(Ordering::Relaxed) || new_len >= sh.too_many {
            std::mem::forget(broken);
            return false;
        }
        // Step 2: the claimed slots by first position.
        {
            let mut list = sh.lists[me].write().unwrap_or_else(PoisonError::into_inner);
            list.clear();
            self.keys.clear();
            for (i, &slot) in self.claimed.iter().enumerate() {
                if let Some(&ahead) = self.claimed.get(i + AHEAD) {
                    sh.index.prefetch_slot(ahead);
                }
                let (key, value) = sh.index.claimed(slot);
                self.keys.push(key);
                list.push(u64::from(value - sh.base) << 32 | i as u64);
            }
            // Nearly sorted: runs in order, a few positions lowered by other threads.
            list.sort();
        }
        sh.gate.wait();
        // Step 3: ids in the one-thread order, markings to the arena.
        let lists: Vec<_> = sh
            .lists
            .iter()
            .map(|l| l.read().unwrap_or_else(PoisonError::into_inner))
            .collect();
        let own = &lists[me];
        self.cursors.fill(0);
        let (mut places, mut ones) = ([0u64; 2], 0u64);
        for (i, &x) in own.iter().enumerate() {
            if let Some(&ahead) = own.get(i + AHEAD) {
                sh.index
                    .prefetch_slot(self.claimed[(ahead & 0xFFFF_FFFF) as usize]);
            }
            let pos = x >> 32;
            let mut id = sh.old_len + i;
            for (t, other) in lists.iter().enumerate() {
                if t != me {
                    let c = &mut self.cursors[t];
                    while other.get(*c).is_some_and(|&y| y >> 32 < pos) {
                        *c += 1;
                    }
                    id += *c;
                }
            }
            let k = (x & 0xFFFF_FFFF) as usize;
            let (slot, key) = (self.claimed[k], self.keys[k]);
            // SAFETY: `id` is below `too_many`, within the reserved arena; each id is
            // written once, by the thread that claimed its slot, and the arena is no longer
            // read during this step.
            unsafe { sh.appender.write(id, key) };
            sh.index.publish(slot, key[1], id as u32);
            places[0] |= key[0];
            places[1] |= key[1];
            ones = ones.max(u64::from(key[0].count_ones() + key[1].count_ones()));
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

/// Spins before a thread sleeps at a barrier (tens of microseconds).
const SPINS: usize = 1 << 10;

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

    /// Lets every thread through every barrier from now on.
    fn break_all(&self) {
        let mut st = self.lock();
        st.2 = true;
        self.open(&mut st);
    }
}
